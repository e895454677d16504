// When each schedule knob applies to a fusion plan, and the sizes a schedule implies for it (shared stash,
// staged inputs, registers): the rules the legality check, the emitters and the search share.
#include <algorithm>

#include "schedule/centered_sums.h"
#include "schedule/read_match.h"
#include "schedule/rescaled_sums.h"
#include "schedule/schedule.h"
#include "te/expr_inl.h"

namespace comfuse::schedule {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::int64_t shared_stash_bytes(const FusionPlan& plan, const Schedule& s) {
  if (s.carried != ValueHome::kShared) return 0;
  const std::int64_t tiles_per_cta = ceil_div(ceil_div(plan.anchor.n, s.bn), s.cluster_n);
  // Ping-pong warpgroups walking alternate row blocks each keep their own.
  const int row_blocks_held = s.alternate_row_blocks() ? 2 : 1;
  return static_cast<std::int64_t>(plan.carried_tiles.size()) * tiles_per_cta * s.bm * s.bn *
         te::dtype_bytes(stash_dtype(s)) * row_blocks_held;
}

bool pair_loadable(const EpilogueInput& input) {
  const te::DType dtype = input.tensor.dtype();
  return (te::dtype_bytes(dtype) == 2 || dtype == te::DType::f32) && input.broadcast != Broadcast::kColumn;
}

bool vector_loads_apply(const FusionPlan& plan, const Schedule& s) {
  if (plan.anchor.n % 2 != 0) return false;
  if (s.carried == ValueHome::kL2Stash && !plan.carried_tiles.empty()) return true;
  return std::any_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(), pair_loadable);
}

bool bf16_stash_applies(const FusionPlan& plan, const Schedule& s) {
  return !plan.carried_tiles.empty() && (s.carried == ValueHome::kL2Stash || s.carried == ValueHome::kShared);
}

te::DType stash_dtype(const Schedule& s) {
  return s.bf16_stash || s.stash_terms ? te::DType::bf16 : te::DType::f32;
}

bool terms_stashable(const FusionPlan& plan) {
  if (plan.rescaled.size() != 1 || !plan.centered.empty() || plan.carried_tiles.size() != 1) return false;
  const RescaledSum& sum = plan.rescaled[0];
  const te::Tensor& carried = plan.carried_tiles[0];
  const auto* x = sum.value.as<te::ReadNode>();
  if (x == nullptr || !te::Tensor(x->tensor).same_as(carried) ||
      !indexed_by(*x, {sum.terms->axes[0].get(), sum.terms->axes[1].get()})) {
    return false;
  }
  for (std::size_t s = plan.stage(carried) + 1; s < plan.stages.size(); ++s) {
    for (const te::Tensor& t : plan.stages[s].tiles) {
      if (t.same_as(sum.terms)) continue;
      for (const te::Tensor& read : te::Program::reads_of(t)) {
        if (read.same_as(carried)) return false;
      }
    }
  }
  return true;
}

bool stash_terms_fit(const FusionPlan& plan, const Schedule& s) {
  const std::int64_t table_bytes = std::int64_t{kFinishThreads / 32} * ceil_div(plan.anchor.n, s.bn) * 4;
  return s.online_softmax && s.deferred() && table_bytes <= kFinishScaleBytes;
}

bool stash_evict_last_applies(const FusionPlan& plan, const Schedule& s) {
  return s.deferred() && s.carried == ValueHome::kL2Stash && !plan.carried_tiles.empty() &&
         (!s.tma_store || s.stash_in_slot);
}

bool store_chunks_applies(const Schedule& s) {
  // (The terms of stash_terms leave a box at a time from their own pass after the element loop.)
  return s.tma_store && s.bn > 2 * 64 && !s.stores_in_place();
}

namespace {

// Whether a stage after the first reads `input` itself (not through a tile computed from it).
bool read_after_first_stage(const FusionPlan& plan, const te::Tensor& input) {
  for (std::size_t stage = 1; stage < plan.stages.size(); ++stage) {
    for (const auto* tensors : {&plan.stages[stage].tiles, &plan.stages[stage].reductions}) {
      for (const te::Tensor& t : *tensors) {
        for (const te::Tensor& read : te::Program::reads_of(t)) {
          if (read.same_as(input)) return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

const EpilogueInput* in_place_store_input(const FusionPlan& plan, const Schedule& s) {
  if (!s.tma_inputs || plan.stages.size() < 2) return nullptr;
  for (const EpilogueInput& input : plan.epilogue_inputs) {
    if (input.broadcast == Broadcast::kFull && te::dtype_bytes(input.tensor.dtype()) == 2 &&
        stages_input(plan, s, input) && !read_after_first_stage(plan, input.tensor)) {
      return &input;
    }
  }
  return nullptr;
}

bool wide_finish_applies(const FusionPlan& plan, const Schedule& s) {
  const auto wide = [](te::DType dtype) { return te::dtype_bytes(dtype) == 2 || dtype == te::DType::f32; };
  if (!s.deferred() || plan.anchor.n % 8 != 0) return false;
  for (const EpilogueInput& input : plan.epilogue_inputs) {
    if (input.broadcast != Broadcast::kColumn && !wide(input.tensor.dtype())) return false;
  }
  // Every stage's tiles, not only the finish kernel's: the answer is then the same for a plan and its merged
  // forms (effective_plan moves tiles between stages, neither adding nor dropping one).
  for (const Stage& stage : plan.stages) {
    for (const te::Tensor& t : stage.tiles) {
      if (!wide(t.dtype())) return false;
    }
  }
  return true;
}

bool batched_reads_apply(const FusionPlan& plan, const Schedule& s) {
  return plan.has_reductions() && !plan.carried_tiles.empty() && s.carried != ValueHome::kRegisters;
}

int read_chunk(const Schedule& s, std::size_t rereads) {
  const int per_tile = s.bn / 2;  // a multiple of 8
  if (!s.deep_reads) return per_tile % 16 == 0 ? 16 : 8;
  for (const int chunk : {64, 32, 16}) {
    if (per_tile % chunk == 0 && static_cast<std::size_t>(chunk) * std::max<std::size_t>(rereads, 1) <= 64) {
      return chunk;
    }
  }
  return 8;
}

int accumulator_registers(const FusionPlan& plan, const Schedule& schedule) {
  const int per_tile = schedule.bn / 2;  // a 64 x BN f32 fragment over 128 threads
  int carried = 0;
  if (schedule.carried == ValueHome::kRegisters && !schedule.carry_in_accumulator) {
    // A carried anchor stays in the accumulator itself; every other carried tile needs its own fragment
    // (unless carry_in_accumulator writes the one carried tile over the accumulator).
    for (const te::Tensor& t : plan.carried_tiles) carried += plan.role(t) == Role::kAnchor ? 0 : 1;
  }
  return per_tile * (1 + carried);
}

bool deferrable(const FusionPlan& plan) {
  return plan.stages.size() == 2 && plan.stages[1].reductions.empty();
}

int finish_rows_per_cta(const Schedule& s) {
  return kFinishThreads / 32 / (s.finish_row_split ? kFinishSplit : 1);
}

bool finish_row_split_applies(const FusionPlan& plan, const Schedule& s) {
  return s.deferred() && plan.has_reductions() &&
         plan.anchor.n >= std::int64_t{kFinishSplit} * kFinishStepColumns;
}

bool multicast_b_applies(const FusionPlan& plan, const Schedule& s) {
  return (!plan.has_reductions() || s.deferred()) && s.cluster_n == 1;
}

int cluster_ctas(const FusionPlan& plan, const Schedule& s) {
  if (s.multicast_b) return 2;
  return plan.has_reductions() && !s.deferred() && !s.global_exchange ? s.cluster_n : 1;
}

bool global_exchange_applies(const FusionPlan& plan, const Schedule& s) {
  return plan.has_reductions() && !s.deferred() && s.cluster_n > 1 && s.persistent;
}

bool unstaged_vectors_apply(const FusionPlan& plan, const Schedule& s) {
  if (!s.tma_inputs) return false;
  bool element_wise = false, vector = false;
  for (const EpilogueInput& input : plan.epilogue_inputs) {
    if (!tma_staged(input)) continue;
    element_wise = element_wise || input.broadcast == Broadcast::kFull;
    vector = vector || input.broadcast == Broadcast::kRow;
  }
  return element_wise && vector;
}

bool resident_vectors_apply(const FusionPlan& plan, const Schedule& s) {
  if (!s.tma_inputs || s.deferred() || !plan.has_reductions() || s.unstaged_vectors) return false;
  if (ceil_div(ceil_div(plan.anchor.n, s.bn), s.cluster_n) != 1) return false;  // one column tile a CTA
  return std::any_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(),
                     [&](const EpilogueInput& input) {
                       return input.broadcast == Broadcast::kRow && stages_input(plan, s, input);
                     });
}

bool divides_by_constant(const te::Expr& e) {
  if (e.kind() != te::ExprKind::kBinary || e.dtype() != te::DType::f32) return false;
  const auto* div = e.as<te::BinaryNode>();
  return div->op == te::BinaryOp::kDiv && div->b.kind() == te::ExprKind::kFloatImm;
}

bool divides_by_row_value(const FusionPlan& plan, const te::Expr& e) {
  if (e.kind() != te::ExprKind::kBinary || e.dtype() != te::DType::f32) return false;
  const auto* div = e.as<te::BinaryNode>();
  const auto reduces = [](const te::Expr& sub) { return sub.kind() == te::ExprKind::kReduce; };
  if (div->op != te::BinaryOp::kDiv || te::any_subexpr(div->b, reduces)) return false;
  std::vector<const te::ReadNode*> reads;
  collect_reads(div->b, reads);
  return !reads.empty() && std::all_of(reads.begin(), reads.end(), [&](const te::ReadNode* read) {
    const te::Tensor t(read->tensor);
    return !t.is_placeholder() && plan.role(t) == Role::kRowValue;
  });
}

namespace {

// Whether an element expression of the epilogue (a tile of any stage) has a subexpression that `matches`.
template <typename Pred>
bool any_element_subexpr(const FusionPlan& plan, const Pred& matches) {
  for (const Stage& stage : plan.stages) {
    for (const te::Tensor& t : stage.tiles) {
      if (t->body.defined() && te::any_subexpr(t->body, matches)) return true;
    }
  }
  return false;
}

}  // namespace

bool reciprocal_division_applies(const FusionPlan& plan) {
  return any_element_subexpr(plan, divides_by_constant);
}

bool approximate_math_applies(const FusionPlan& plan) {
  return any_element_subexpr(plan, [](const te::Expr& e) {
    if (e.kind() != te::ExprKind::kUnary) return false;
    const te::UnaryOp op = e.as<te::UnaryNode>()->op;
    return op == te::UnaryOp::kExp || op == te::UnaryOp::kTanh;
  });
}

bool prefetch_inputs_apply(const FusionPlan& plan) {
  return std::any_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(),
                     [&](const EpilogueInput& input) {
                       return input.broadcast == Broadcast::kFull &&
                              plan.anchor.n * te::dtype_bytes(input.tensor.dtype()) % 16 == 0;
                     });
}

bool one_pass_variance_applies(const FusionPlan& plan) {
  return !find_centered_sums(plan).empty();
}

bool online_softmax_applies(const FusionPlan& plan) {
  return !find_rescaled_sums(plan).empty();
}

bool tma_staged(const EpilogueInput& input) {
  return te::dtype_bytes(input.tensor.dtype()) == 2 && input.broadcast != Broadcast::kColumn;
}

std::int64_t tiles_per_warpgroup(const FusionPlan& plan, const Schedule& s) {
  const std::int64_t tiles_per_cta = ceil_div(ceil_div(plan.anchor.n, s.bn), s.cluster_n);
  // Ping-pong warpgroups take alternate tiles of the same rows, unless they take alternate row blocks.
  return s.warp_roles == WarpRoles::kPingPong && !s.alternate_row_blocks() ? ceil_div(tiles_per_cta, 2)
                                                                           : tiles_per_cta;
}

bool stages_input(const FusionPlan& plan, const Schedule& s, const EpilogueInput& input) {
  if (!tma_staged(input)) return false;
  if (s.unstaged_vectors && input.broadcast == Broadcast::kRow) return false;
  if (!s.deferred()) return true;
  const Stage& first = plan.stages.front();
  for (const auto* tensors : {&first.tiles, &first.reductions}) {
    for (const te::Tensor& t : *tensors) {
      for (const te::Tensor& read : te::Program::reads_of(t)) {
        if (read.same_as(input.tensor)) return true;
      }
    }
  }
  return false;
}

bool tma_inputs_apply(const FusionPlan& plan, const Schedule& s) {
  // A deferred reduction's warpgroups hold one tile at a time, whatever the value home.
  const bool one_tile =
      s.deferred() || (s.carried == ValueHome::kRegisters && tiles_per_warpgroup(plan, s) == 1);
  return plan.has_reductions() && one_tile && plan.anchor.n % 8 == 0 &&
         std::any_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(),
                     [&](const EpilogueInput& input) { return stages_input(plan, s, input); });
}

bool in_staged_slot(const FusionPlan& plan, const Schedule& s, const EpilogueInput& input) {
  return stages_input(plan, s, input) && !(s.resident_vectors && input.broadcast == Broadcast::kRow);
}

std::int64_t staged_input_bytes(const FusionPlan& plan, const Schedule& s) {
  if (!s.tma_inputs) return 0;
  const std::int64_t boxes = ceil_div(s.bn, 64);
  std::int64_t slot = 0, resident = 0;
  for (const EpilogueInput& input : plan.epilogue_inputs) {
    if (!stages_input(plan, s, input)) continue;
    const std::int64_t rows = input.broadcast == Broadcast::kFull ? s.bm : 1;
    (in_staged_slot(plan, s, input) ? slot : resident) += ceil_div(boxes * rows * 128, 1024) * 1024;
  }
  // The slots' four mbarriers, and the resident vectors' one.
  return (s.one_input_slot ? 1 : 2) * slot + 4 * 8 + (resident > 0 ? resident + 8 : 0);
}

bool staged_reads_end_in_first_stage(const FusionPlan& plan, const Schedule& s) {
  return std::none_of(plan.epilogue_inputs.begin(), plan.epilogue_inputs.end(),
                      [&](const EpilogueInput& input) {
                        return in_staged_slot(plan, s, input) && read_after_first_stage(plan, input.tensor);
                      });
}

bool one_input_slot_applies(const FusionPlan& plan, const Schedule& s) {
  if (!s.tma_inputs) return false;
  if (s.deferred()) return true;  // the main kernel has one stage
  // Row reductions combined in the kernel: the slot is released after the first stage, so only it may read
  // the staged inputs, and no output may be stored over the slot in the last.
  return plan.has_reductions() && !s.stores_in_place() && staged_reads_end_in_first_stage(plan, s);
}

bool staged_pairs_applies(const Schedule& s) {
  return s.tma_inputs && s.vector_loads;
}

bool box_reads_applies(const Schedule& s) {
  return s.staged_pairs;
}

bool stash_in_slot_applies(const FusionPlan& plan, const Schedule& s) {
  return s.deferred() && s.tma_store && in_place_store_input(plan, s) != nullptr;
}

bool streaming_hints_apply(const Schedule& s) {
  return s.wide_finish && te::dtype_bytes(stash_dtype(s)) == 2;
}

bool finish_row_in_registers(const FusionPlan& plan, const Schedule& s) {
  if (!s.finish_reductions || stash_dtype(s) != te::DType::bf16) return false;
  // A lane's registers a step: two 16-byte groups of eight (wide), or eight pairs of two bf16 (pairs).
  if (!s.wide_finish && !(s.vector_loads && plan.anchor.n % 2 == 0)) return false;
  const std::int64_t per_step = s.wide_finish ? kFinishRowElements / 8 * 4 : kFinishRowElements / 2;
  return ceil_div(plan.anchor.n, kFinishStepColumns) * per_step *
             static_cast<std::int64_t>(plan.carried_tiles.size()) <=
         kFinishKeptRegisters;
}

bool finish_reductions_apply(const FusionPlan& plan, const Schedule& s) {
  if (!s.deferred() || s.online_softmax || s.stash_terms || s.finish_row_split) return false;
  return with_effective_plan(plan, s, [](const FusionPlan& effective) {
    if (effective.stages.empty() || effective.carried_tiles.empty()) return false;
    const auto readable = [&](const te::Tensor& t) {
      const auto same = [&](const te::Tensor& other) { return other.same_as(t); };
      if (std::any_of(effective.carried_tiles.begin(), effective.carried_tiles.end(), same)) return true;
      return std::any_of(effective.epilogue_inputs.begin(), effective.epilogue_inputs.end(),
                         [&](const EpilogueInput& input) { return input.tensor.same_as(t); });
    };
    for (const te::Tensor& t : effective.stages[0].reductions) {
      std::vector<const te::ReduceNode*> reduces;
      collect_reduces(t->body, reduces);
      for (const te::ReduceNode* node : reduces) {
        // What the element loop evaluates of it: a centered sum's value, else the reduction's body.
        const auto centered = std::find_if(effective.centered.begin(), effective.centered.end(),
                                           [&](const CenteredSum& c) { return c.reduce == node; });
        std::vector<const te::ReadNode*> reads;
        collect_reads(centered != effective.centered.end() ? centered->value : node->body, reads);
        for (const te::ReadNode* read : reads) {
          if (!readable(te::Tensor(read->tensor))) return false;
        }
      }
    }
    return true;
  });
}

bool carry_in_accumulator_applies(const FusionPlan& plan, const Schedule& s) {
  if (s.carried != ValueHome::kRegisters) return false;
  return with_effective_plan(plan, s, [](const FusionPlan& effective) {
    return effective.carried_tiles.size() == 1 && effective.role(effective.carried_tiles[0]) != Role::kAnchor;
  });
}

FusionPlan effective_plan(const FusionPlan& plan, const Schedule& s) {
  FusionPlan effective = s.one_pass_variance ? merge_centered_sums(plan) : plan;
  return s.online_softmax ? merge_rescaled_sums(effective) : effective;
}

}  // namespace comfuse::schedule
