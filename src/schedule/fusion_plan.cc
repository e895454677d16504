// Fusion analysis of a program around its contraction anchor.
#include "schedule/fusion_plan.h"

#include <algorithm>
#include <map>
#include <optional>

#include "schedule/read_match.h"
#include "support/error.h"
#include "te/printer.h"

namespace comfuse::schedule {
namespace {

using te::Expr;
using te::ExprKind;
using te::Tensor;

// Recognises out[i0, i1] = sum_k A[i0, k] * B[i1, k] (or B[k, i1]); factors may be cast. Returns nothing when
// the compute is no contraction at all. A rank-1 sum of a product (a weighted row sum, sum(x * x)) is a row
// reduction of the epilogue, not a contraction.
std::optional<Anchor> match_contraction(const Tensor& t) {
  const std::optional<ProductSum> shape = match_product_sum(t);
  if (!shape) return std::nullopt;
  const te::ReduceNode* reduce = shape->reduce;
  const te::BinaryNode* mul = shape->product;
  const te::ReadNode* a = shape->a;
  const te::ReadNode* b = shape->b;
  if (t.shape().size() != 2) {
    throw CompileError("op '" + t.name() + "' is a batched contraction of rank " +
                       std::to_string(t.shape().size()) +
                       ": the fused GEMM planner handles [M, N] contractions");
  }
  const te::VarNode* k = reduce->axes[0].get();
  const te::VarNode* i = t->axes[0].get();
  const te::VarNode* j = t->axes[1].get();
  if (a->indices.size() != 2 || !is_var(a->indices[0], i) || !is_var(a->indices[1], k)) {
    throw CompileError("contraction '" + t.name() + "' reads its first operand '" + a->tensor->name +
                       "' as " + te::to_string(mul->a) + ": expected " + a->tensor->name + "[i0, " + k->name +
                       "]");
  }
  Anchor anchor;
  anchor.tensor = t;
  anchor.a = Tensor(a->tensor);
  anchor.b = Tensor(b->tensor);
  if (b->indices.size() == 2 && is_var(b->indices[0], j) && is_var(b->indices[1], k)) {
    anchor.b_k_major = true;
  } else if (b->indices.size() == 2 && is_var(b->indices[0], k) && is_var(b->indices[1], j)) {
    anchor.b_k_major = false;
  } else {
    throw CompileError("contraction '" + t.name() + "' reads its second operand '" + b->tensor->name +
                       "' as " + te::to_string(mul->b) + ": expected " + b->tensor->name + "[i1, " + k->name +
                       "] or " + b->tensor->name + "[" + k->name + ", i1]");
  }
  if (t.dtype() != te::DType::f32) {
    throw CompileError("contraction '" + t.name() + "' accumulates in " +
                       std::string(te::dtype_name(t.dtype())) + ": the tensor cores accumulate in f32");
  }
  for (const Tensor& operand : {anchor.a, anchor.b}) {
    if (!operand.is_placeholder()) {
      throw CompileError("contraction '" + t.name() + "' reads '" + operand.name() +
                         "', which is computed: back-to-back contractions are planned by the B2B planner");
    }
    if (operand.dtype() != te::DType::bf16 && operand.dtype() != te::DType::f16) {
      throw CompileError("contraction '" + t.name() + "' operand '" + operand.name() + "' is " +
                         std::string(te::dtype_name(operand.dtype())) +
                         ": the tensor-core path takes bf16 or f16");
    }
  }
  if (anchor.a.dtype() != anchor.b.dtype()) {
    throw CompileError("contraction '" + t.name() + "' mixes operand dtypes " +
                       std::string(te::dtype_name(anchor.a.dtype())) + " and " +
                       std::string(te::dtype_name(anchor.b.dtype())));
  }
  anchor.m = t.shape()[0];
  anchor.n = t.shape()[1];
  anchor.k = reduce->axes[0].extent();
  return anchor;
}

// Checks every read of one epilogue compute and computes its stage.
class EpilogueChecker {
 public:
  EpilogueChecker(FusionPlan& plan, std::map<const te::TensorNode*, Broadcast>& broadcasts)
      : plan_(plan), broadcasts_(broadcasts) {}

  // Returns the stage in which `t` is evaluated; for a reduction, the stage whose tiles it reduces.
  int check(const Tensor& t, Role role) {
    tensor_ = &t;
    role_ = role;
    row_ = t->axes[0].get();
    col_ = role == Role::kTile ? t->axes[1].get() : nullptr;
    reduce_axis_ = nullptr;
    stage_ = 0;
    reduce_stage_ = -1;
    visit(t->body);
    if (role == Role::kRowValue && reduce_stage_ >= 0) return std::max(reduce_stage_, stage_);
    return stage_;
  }
  bool reduces() const { return reduce_stage_ >= 0; }

 private:
  void visit(const Expr& e) {
    if (const auto* reduce = e.as<te::ReduceNode>()) {
      if (role_ == Role::kTile) fail("reduces inside a [M, N] tile: write the reduction as a [M] tensor");
      if (reduce->axes.size() != 1 || reduce->axes[0].extent() != plan_.anchor.n) {
        fail("reduces over " + std::to_string(reduce->axes.size()) + " axes of extent " +
             std::to_string(reduce->axes[0].extent()) + ": only reductions over the N=" +
             std::to_string(plan_.anchor.n) + " columns of a row are fused");
      }
      reduce_axis_ = reduce->axes[0].get();
      const int outer = stage_;
      stage_ = 0;
      te::for_each_child(e, [&](const Expr& child) { visit(child); });
      reduce_stage_ = std::max(reduce_stage_, stage_);
      stage_ = outer;
      reduce_axis_ = nullptr;
      return;
    }
    if (const auto* read = e.as<te::ReadNode>()) {
      check_read(e, *read);
      return;  // indices were checked as a whole
    }
    te::for_each_child(e, [&](const Expr& child) { visit(child); });
  }

  void check_read(const Expr& e, const te::ReadNode& read) {
    const Tensor source(read.tensor);
    // Inside a reduction the column is the reduce axis; outside it, the tile's own column axis.
    const te::VarNode* col = reduce_axis_ != nullptr ? reduce_axis_ : col_;
    const bool at_row_col = read.indices.size() == 2 && is_var(read.indices[0], row_) && col != nullptr &&
                            is_var(read.indices[1], col);
    const bool at_row = read.indices.size() == 1 && is_var(read.indices[0], row_);
    const bool at_col = read.indices.size() == 1 && col != nullptr && is_var(read.indices[0], col);
    if (source.is_placeholder()) {
      if (source.same_as(plan_.anchor.a) || source.same_as(plan_.anchor.b)) {
        fail("reads the contraction operand '" + source.name() + "' in its epilogue");
      }
      Broadcast broadcast;
      if (at_row_col) {
        broadcast = Broadcast::kFull;
      } else if (at_col) {
        broadcast = Broadcast::kRow;
      } else if (at_row) {
        broadcast = Broadcast::kColumn;
      } else {
        fail("reads input '" + source.name() + "' as " + te::to_string(e) +
             ": inputs are read at (row, column), (column) or (row) of the tile");
      }
      auto [it, fresh] = broadcasts_.emplace(source.get(), broadcast);
      if (!fresh && it->second != broadcast) {
        fail("reads input '" + source.name() + "' both as " + std::string(broadcast_name(it->second)) +
             " and as " + std::string(broadcast_name(broadcast)));
      }
      return;
    }
    const Role source_role = plan_.role(source);
    const int source_stage = plan_.stage(source);
    if (source_role == Role::kAnchor || source_role == Role::kTile) {
      if (!at_row_col) {
        fail("reads '" + source.name() + "' as " + te::to_string(e) +
             ": tiles are read element-aligned, at (row, column)");
      }
    } else if (source_role == Role::kRowValue) {
      if (!at_row)
        fail("reads row value '" + source.name() + "' as " + te::to_string(e) + ": expected (row)");
    } else {
      throw InternalError("epilogue read of an input handled above");
    }
    stage_ = std::max(stage_, source_stage);
  }

  [[noreturn]] void fail(const std::string& reason) const {
    throw CompileError("op '" + tensor_->name() + "' cannot be fused: it " + reason);
  }

  FusionPlan& plan_;
  std::map<const te::TensorNode*, Broadcast>& broadcasts_;
  const Tensor* tensor_ = nullptr;
  Role role_ = Role::kTile;
  const te::VarNode* row_ = nullptr;
  const te::VarNode* col_ = nullptr;
  const te::VarNode* reduce_axis_ = nullptr;
  int stage_ = 0;
  int reduce_stage_ = -1;
};

}  // namespace

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kInput:
      return "input";
    case Role::kAnchor:
      return "anchor";
    case Role::kTile:
      return "tile";
    case Role::kRowValue:
      return "row";
  }
  return "?";
}

std::string_view broadcast_name(Broadcast broadcast) {
  switch (broadcast) {
    case Broadcast::kFull:
      return "full [M, N]";
    case Broadcast::kRow:
      return "row vector [N]";
    case Broadcast::kColumn:
      return "column vector [M]";
  }
  return "?";
}

FusionPlan plan_fusion(const te::Program& program) {
  FusionPlan plan{program, {}, {}, {}, {}, {}, {}, {}, {}};
  const auto& tensors = program.tensors();
  plan.roles.assign(tensors.size(), Role::kInput);
  plan.stage_of.assign(tensors.size(), 0);

  std::optional<Anchor> anchor;
  for (const Tensor& t : tensors) {
    std::optional<Anchor> candidate = match_contraction(t);
    if (!candidate) continue;
    if (anchor) {
      throw CompileError("op '" + t.name() + "' is a second contraction after '" + anchor->tensor.name() +
                         "': back-to-back contractions are planned by the B2B planner");
    }
    anchor = candidate;
  }
  if (!anchor)
    throw CompileError("program has no contraction (sum over k of A[i, k] * B[.., ..]) to fuse around");
  plan.anchor = *anchor;
  plan.roles[program.index_of(anchor->tensor)] = Role::kAnchor;

  std::map<const te::TensorNode*, Broadcast> broadcasts;
  std::map<const te::TensorNode*, bool> depends_on_anchor{{anchor->tensor.get(), true}};
  int last_stage = 0;
  for (std::size_t index = 0; index < tensors.size(); ++index) {
    const Tensor& t = tensors[index];
    if (t.is_placeholder() || t.same_as(anchor->tensor)) continue;
    bool from_anchor = false;
    for (const Tensor& source : te::Program::reads_of(t))
      from_anchor = from_anchor || depends_on_anchor[source.get()];
    if (!from_anchor) {
      throw CompileError("op '" + t.name() + "' cannot be fused: it does not depend on the contraction '" +
                         anchor->tensor.name() + "'");
    }
    depends_on_anchor[t.get()] = true;
    Role role;
    if (t.shape() == std::vector<std::int64_t>{anchor->m, anchor->n}) {
      role = Role::kTile;
    } else if (t.shape() == std::vector<std::int64_t>{anchor->m}) {
      role = Role::kRowValue;
    } else {
      throw CompileError("op '" + t.name() + "' cannot be fused: its shape is neither [M, N] = [" +
                         std::to_string(anchor->m) + ", " + std::to_string(anchor->n) + "] nor [M] = [" +
                         std::to_string(anchor->m) + "]");
    }
    plan.roles[index] = role;
    EpilogueChecker checker(plan, broadcasts);
    const int evaluated_in = checker.check(t, role);
    const bool is_reduction = checker.reduces();
    plan.stage_of[index] = is_reduction ? evaluated_in + 1 : evaluated_in;
    last_stage = std::max(last_stage, plan.stage_of[index]);
    if (static_cast<int>(plan.stages.size()) <= evaluated_in) plan.stages.resize(evaluated_in + 1);
    Stage& stage = plan.stages[evaluated_in];
    if (role == Role::kTile) {
      stage.tiles.push_back(t);
    } else if (is_reduction) {
      stage.reductions.push_back(t);
    } else {
      stage.row_values.push_back(t);
    }
  }
  plan.stages.resize(std::max<std::size_t>(plan.stages.size(), last_stage + 1));

  plan.carried_tiles = carried_tiles_of(plan);

  for (const Tensor& output : program.outputs()) {
    const Role role = plan.role(output);
    if (role != Role::kTile && role != Role::kRowValue && role != Role::kAnchor) {
      throw InternalError("output '" + output.name() + "' has role " + std::string(role_name(role)));
    }
  }
  for (const Tensor& t : tensors) {
    auto it = broadcasts.find(t.get());
    if (it != broadcasts.end()) plan.epilogue_inputs.push_back({t, it->second});
  }
  return plan;
}

std::vector<Tensor> carried_tiles_of(const FusionPlan& plan) {
  // A tile read in a later stage than the one computing it must survive the reduction barrier.
  std::vector<Tensor> carried;
  for (const Tensor& consumer : plan.program.tensors()) {
    if (consumer.is_placeholder() || plan.role(consumer) == Role::kAnchor) continue;
    const bool reduces = std::any_of(plan.stages.begin(), plan.stages.end(), [&](const Stage& stage) {
      return std::any_of(stage.reductions.begin(), stage.reductions.end(),
                         [&](const Tensor& r) { return r.same_as(consumer); });
    });
    const int evaluated_in = plan.stage(consumer) - (reduces ? 1 : 0);
    for (const Tensor& source : te::Program::reads_of(consumer)) {
      if (source.is_placeholder()) continue;
      const Role source_role = plan.role(source);
      const bool listed =
          std::any_of(carried.begin(), carried.end(), [&](const Tensor& t) { return t.same_as(source); });
      if ((source_role == Role::kTile || source_role == Role::kAnchor) && plan.stage(source) < evaluated_in &&
          !listed) {
        carried.push_back(source);
      }
    }
  }
  return carried;
}

int exchanged_floats(const FusionPlan& plan, const te::ReduceNode* reduce) {
  for (const CenteredSum& centered : plan.centered) {
    if (centered.reduce == reduce) return 3;
  }
  for (const RescaledSum& rescaled : plan.rescaled) {
    if (rescaled.reduce == reduce) return 2;
  }
  return 1;
}

void drop_empty_stages(FusionPlan& plan) {
  for (int s = static_cast<int>(plan.stages.size()) - 2; s > 0; --s) {
    const Stage& stage = plan.stages[s];
    if (!stage.tiles.empty() || !stage.reductions.empty() || !stage.row_values.empty()) continue;
    plan.stages.erase(plan.stages.begin() + s);
    // Tiles and row values evaluated after stage s, and reductions available after it (of stage s or later).
    for (int& of : plan.stage_of) {
      if (of > s) --of;
    }
  }
  plan.carried_tiles = carried_tiles_of(plan);
}

std::string to_string(const FusionPlan& plan) {
  const Anchor& a = plan.anchor;
  std::string s = "anchor " + a.tensor.name() + " = " + a.a.name() + "[M, K] x " + a.b.name() +
                  (a.b_k_major ? "[N, K]" : "[K, N]") + "  M=" + std::to_string(a.m) +
                  " N=" + std::to_string(a.n) + " K=" + std::to_string(a.k) + "\n";
  auto names = [](const std::vector<Tensor>& tensors) {
    std::string list;
    for (const Tensor& t : tensors) list += (list.empty() ? "" : ", ") + t.name();
    return list.empty() ? std::string("-") : list;
  };
  for (std::size_t s_index = 0; s_index < plan.stages.size(); ++s_index) {
    const Stage& stage = plan.stages[s_index];
    s += "stage " + std::to_string(s_index) + ": tiles " + names(stage.tiles) + "; row values " +
         names(stage.row_values) + "; reductions " + names(stage.reductions) + "\n";
  }
  s += "carried across reductions: " + names(plan.carried_tiles) + "\n";
  s += "epilogue inputs:";
  if (plan.epilogue_inputs.empty()) s += " -";
  for (const EpilogueInput& input : plan.epilogue_inputs) {
    s += " " + input.tensor.name() + " (" + std::string(broadcast_name(input.broadcast)) + ")";
  }
  return s + "\n";
}

}  // namespace comfuse::schedule
