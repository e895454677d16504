// Stage-Stream epilogue emission.
#include "codegen/epilogue_emitter.h"

#include <algorithm>

#include "codegen/epilogue_names.h"
#include "codegen/expr_emitter.h"
#include "schedule/read_match.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::Broadcast;
using schedule::Role;
using schedule::ValueHome;

std::string value_type(te::DType dtype) {
  return dtype == te::DType::i32 ? "int" : "float";
}

// Where carried tile c keeps element i of this thread's fragment of the CTA's t-th column tile in shared
// memory: thread-fastest, so that a warp's 32 accesses fall in 32 different banks.
std::string shared_stash_slot(std::size_t c) {
  return "sstash[((" + std::to_string(c) + " * TILES_PER_CTA + t) * (BN / 2) + i) * (BM * 2) + stash_thread]";
}

}  // namespace

EpilogueEmitter::EpilogueEmitter(const schedule::FusionPlan& plan, const schedule::Schedule& schedule,
                                 std::map<const te::TensorNode*, std::string> params, Walk walk)
    : plan_(plan), schedule_(schedule), params_(std::move(params)), staged_(plan, schedule), walk_(walk) {
  for (std::size_t s = 0; s < plan_.stages.size(); ++s) {
    int index = 0, xslot = 0;
    for (const te::Tensor& t : plan_.stages[s].reductions) {
      std::vector<const te::ReduceNode*> reduces;
      schedule::collect_reduces(t->body, reduces);
      for (const te::ReduceNode* node : reduces) {
        const auto centered = std::find_if(plan_.centered.begin(), plan_.centered.end(),
                                           [&](const schedule::CenteredSum& c) { return c.reduce == node; });
        const schedule::CenteredSum* merged = centered != plan_.centered.end() ? &*centered : nullptr;
        const auto rescaled = std::find_if(plan_.rescaled.begin(), plan_.rescaled.end(),
                                           [&](const schedule::RescaledSum& r) { return r.reduce == node; });
        const schedule::RescaledSum* online = rescaled != plan_.rescaled.end() ? &*rescaled : nullptr;
        const Slot slot{node, t, static_cast<int>(s), index++, xslot, merged, online};
        // The legality check sized the exchange with the plan's count: the layout must take the same.
        const int floats = schedule::exchanged_floats(plan_, node);
        COMFUSE_CHECK(static_cast<int>(exchanged(slot).size()) == floats,
                      "reduction '" + t.name() + "' exchanges as many floats as the plan counts");
        slots_.push_back(slot);
        xslot += floats;
      }
    }
  }
}

std::string EpilogueEmitter::elements() const {
  return walk_ == Walk::kRow ? "ROW_ELEMS" : "BN / 2";
}

std::string EpilogueEmitter::rows_loop() const {
  return walk_ == Walk::kRow ? "for (int h = 0; h < 1; ++h)" : "for (int h = 0; h < 2; ++h)";
}

std::string EpilogueEmitter::row_of_h() const {
  return walk_ == Walk::kRow ? "row" : "m0 + local_row0 + 8 * h";
}

std::string EpilogueEmitter::column_of_i() const {
  if (wide_rows()) return "n0 + (i >> 3) * 256 + lane * 8 + (i & 7)";
  return walk_ == Walk::kRow ? "n0 + (i >> 1) * 64 + lane * 2 + (i & 1)"
                             : "n0 + (i >> 2) * 8 + (lane & 3) * 2 + (i & 1)";
}

std::string EpilogueEmitter::interior_test() const {
  return walk_ == Walk::kRow ? "n0 + ROW_ELEMS / 2 * 64 <= N" : "m0 + BM <= M && n0 + BN <= N";
}

int EpilogueEmitter::max_reductions_per_stage() const {
  int most = 0;
  for (const Slot& slot : slots_)
    most = std::max(most, slot.xslot + schedule::exchanged_floats(plan_, slot.node));
  return most;
}

std::vector<EpilogueEmitter::Slot> EpilogueEmitter::slots_of_stage(int stage) const {
  std::vector<Slot> result;
  for (const Slot& slot : slots_) {
    if (slot.stage == stage) result.push_back(slot);
  }
  return result;
}

bool EpilogueEmitter::is_output(const te::Tensor& t) const {
  for (const te::Tensor& output : plan_.program.outputs()) {
    if (output.same_as(t)) return true;
  }
  return false;
}

std::string EpilogueEmitter::load(const te::Tensor& input, Broadcast broadcast, bool interior) const {
  // Pairs are loaded at the pair's first element (emit_pair_loads), staged ones too with staged_pairs.
  const bool pair = pair_loadable(input, broadcast), staged = staged_.staged(input);
  if (staged && !pair) return staged_.read(input, broadcast, interior);
  if (!staged && wide_loadable(broadcast)) return wide_read(input.name());  // at its group's start
  if (pair) return pair_element(input.dtype(), "lp_" + input.name());
  const std::string& param = params_.at(input.get());
  std::string index, guard;
  switch (broadcast) {
    case Broadcast::kFull:
      index = "(size_t)grow * N + gcol";
      guard = "inb";
      break;
    case Broadcast::kRow:
      index = "gcol";
      guard = "gcol < N";
      break;
    case Broadcast::kColumn:
      index = "grow";
      guard = "grow < M";
      break;
  }
  const std::string value = widen(input.dtype(), param + "[" + index + "]");
  if (interior && broadcast != Broadcast::kColumn) return value;  // grow < M and gcol < N hold
  return "(" + guard + " ? " + value + " : " + (input.dtype() == te::DType::i32 ? "0" : "0.0f") + ")";
}

ExprBindings EpilogueEmitter::element_bindings() const {
  ExprBindings bindings;
  bindings.approximate_math = schedule_.approximate_math;
  bindings.reciprocal_division = schedule_.reciprocal_division;
  bindings.packed_rounding = schedule_.packed_rounding;
  return bindings;
}

std::vector<std::size_t> EpilogueEmitter::rereads(int stage) const {
  std::vector<std::size_t> reads;
  if (schedule_.carried == ValueHome::kRegisters) return reads;
  for (std::size_t c = 0; c < plan_.carried_tiles.size(); ++c) {
    if (plan_.stage(plan_.carried_tiles[c]) < stage) reads.push_back(c);
  }
  return reads;
}

std::vector<std::size_t> EpilogueEmitter::batched_reads(int stage) const {
  return schedule_.batched_reads ? rereads(stage) : std::vector<std::size_t>{};
}

std::vector<std::size_t> EpilogueEmitter::stash_reads(int stage) const {
  const bool paired = schedule_.carried == ValueHome::kL2Stash && !schedule_.batched_reads;
  return paired ? rereads(stage) : std::vector<std::size_t>{};
}

std::string EpilogueEmitter::stash_load(std::size_t c) const {
  const te::DType dtype = schedule::stash_dtype(schedule_);
  if (schedule_.carried == ValueHome::kShared)
    return "(inb ? " + widen(dtype, shared_stash_slot(c)) + " : 0.0f)";
  return "(inb ? " + widen(dtype, "stash[" + stash_index(std::to_string(c)) + "]") + " : 0.0f)";
}

std::string EpilogueEmitter::carried_read(const te::Tensor& tile, bool batched) const {
  if (schedule_.carried == ValueHome::kRegisters) {
    const bool in_accumulator = plan_.role(tile) == Role::kAnchor || schedule_.carry_in_accumulator;
    return in_accumulator ? "acc[i]" : "carry_" + tile.name() + "[i]";
  }
  const auto it = std::find_if(plan_.carried_tiles.begin(), plan_.carried_tiles.end(),
                               [&](const te::Tensor& t) { return t.same_as(tile); });
  const auto index = static_cast<std::size_t>(it - plan_.carried_tiles.begin());
  const auto c = std::to_string(index);
  if (wide_rows()) return wide_read("stash" + c);  // loaded at the group's first column
  if (batched) return "pre" + c + "[j]";
  if (schedule_.carried == ValueHome::kL2Stash && loads_in_pairs()) {
    return pair_element(schedule::stash_dtype(schedule_), "lp_stash" + c);  // zero when !inb
  }
  return stash_load(index);
}

void EpilogueEmitter::declare_state(CodeStream& out) const {
  for (const Slot& slot : slots_) {
    const std::string name = slot_name(slot.stage, slot.index);
    if (slot.centered != nullptr) {
      out.line("float " + name + "[2], " + name + "_n[2], " + name + "_c[2], " + name + "_s[2];  // '" +
               slot.owner.name() +
               "' in one pass: squared deviations, count, shift (then mean), shifted sum");
      continue;
    }
    if (slot.rescaled != nullptr) {
      out.line("float " + name + "[2], " + name + "_m[2];  // '" + slot.owner.name() +
               "' online: sum of exp(x - running max), running max");
      continue;
    }
    out.line("float " + name + "[2];  // " + std::string(te::reduce_op_name(slot.node->op)) +
             " partials of '" + slot.owner.name() + "' for this thread's two rows");
  }
  for (const te::Tensor& t : plan_.program.tensors()) {
    if (!t.is_placeholder() && plan_.role(t) == Role::kRowValue) {
      out.line(value_type(t.dtype()) + " row_" + t.name() + "[2];");
    }
  }
  if (schedule_.carried == ValueHome::kRegisters && !schedule_.carry_in_accumulator) {
    for (const te::Tensor& t : plan_.carried_tiles) {
      if (plan_.role(t) != Role::kAnchor) out.line("float carry_" + t.name() + "[BN / 2];");
    }
  }
}

void EpilogueEmitter::emit_row_values(CodeStream& out, const std::vector<te::Tensor>& tensors) const {
  for (const te::Tensor& t : tensors) {
    out.open(rows_loop());
    out.line("const int grow = " + row_of_h() + ";");
    ExprBindings bindings;
    bindings.packed_rounding = schedule_.packed_rounding;
    bindings.vars[t->axes[0].get()] = "grow";
    for (const te::Tensor& source : te::Program::reads_of(t)) {
      if (source.is_placeholder()) {
        bindings.reads[source.get()] = load(source, Broadcast::kColumn, false);
      } else {
        bindings.reads[source.get()] = "row_" + source.name() + "[h]";
      }
    }
    for (const Slot& slot : slots_) {
      if (!slot.owner.same_as(t)) continue;
      const std::string name = slot_name(slot.stage, slot.index);
      if (slot.centered != nullptr) {  // the sum about the center m: M2 + n (mean - m)^2
        const std::string gap = "(" + name + "_c[h] - row_" + slot.centered->center.name() + "[h])";
        bindings.reductions[slot.node] = "(" + name + "[h] + " + name + "_n[h] * " + gap + " * " + gap + ")";
      } else if (slot.rescaled != nullptr) {  // the sum about the center m: s exp(max - m)
        bindings.reductions[slot.node] =
            "(" + name + "[h] * expf(" + name + "_m[h] - row_" + slot.rescaled->center.name() + "[h]))";
      } else {
        bindings.reductions[slot.node] = name + "[h]";
      }
    }
    out.line("row_" + t.name() + "[h] = " + emit_expr(t->body, bindings) + ";");
    if (is_output(t)) {
      out.line("if (row_writer && grow < M) out_" + t.name() +
               "[grow] = " + store_value(t.dtype(), "row_" + t.name() + "[h]") + ";");
    }
    out.close();
  }
}

void EpilogueEmitter::begin_stage(CodeStream& out, int stage) const {
  out.line("// ---- stage " + std::to_string(stage) + " ----");
  emit_row_values(out, plan_.stages[stage].row_values);
  for (const Slot& slot : slots_of_stage(stage)) {
    const std::string name = slot_name(slot.stage, slot.index);
    out.line(name + "[0] = " + name + "[1] = " + identity(slot.node->op) + ";");
    if (slot.centered != nullptr) {
      for (const char* part : {"_n", "_c", "_s"})
        out.line(name + part + "[0] = " + name + part + "[1] = 0.0f;");
    }
    if (slot.rescaled != nullptr)
      out.line(name + "_m[0] = " + name + "_m[1] = " + identity(te::ReduceOp::kMax) + ";");
  }
}

const schedule::EpilogueInput& EpilogueEmitter::in_place_input() const {
  const schedule::EpilogueInput* input = schedule::in_place_store_input(plan_, schedule_);
  COMFUSE_CHECK(input != nullptr, "an output stored in place has a staged input to go over");
  return *input;
}

std::int64_t EpilogueEmitter::in_place_offset() const {
  return staged_.offset_of(in_place_input().tensor);
}

std::string EpilogueEmitter::stored_map() const {
  return schedule_.deferred() ? "&tma_stash" : "&tma_out";
}

void EpilogueEmitter::chunk_wait(CodeStream& out) const {
  out.open("if ((i & 31) == 0 && i >= 64)");
  out.line("// Box i / 32 goes into the buffer of box i / 32 - 2: once that box's store has read it.");
  out.line("if (store_leader) bulk_wait_read_all_but_one();");
  out.line("warpgroup_sync(consumer);");
  out.close();
}

void EpilogueEmitter::chunk_store(CodeStream& out) const {
  out.open("if ((i & 31) == 31)");
  out.line("// Box i / 32 is whole: made visible to the TMA engine and stored by one thread.");
  out.line("fence_proxy_async_shared();");
  out.line("warpgroup_sync(consumer);");
  out.open("if (store_leader)");
  out.line("tma_store_2d(" + stored_map() +
           ", stage_out + ((i >> 5) & 1) * 64 * 64, n0 + 64 * (i >> 5), m0 + a_row0);");
  out.line("bulk_commit();");
  out.close();
  out.close();
}

std::string EpilogueEmitter::in_place_address() const {
  // The staged input's pair at fragment element i - 1 and i, as StagedInputs reads it ((i & 1) = 0).
  return staged_.address(in_place_input().tensor, in_place_input().broadcast);
}

bool EpilogueEmitter::stores_in_pairs() const {
  return plan_.anchor.n % 2 == 0;
}

std::vector<EpilogueEmitter::Store> EpilogueEmitter::stores_of_stage(int stage) const {
  std::vector<Store> stores;
  // Outputs leave through the staging buffer in plans without reductions; a deferred reduction's stash does.
  const bool outputs_staged = schedule_.tma_store && !schedule_.deferred();
  for (const te::Tensor& t : plan_.stages[stage].tiles) {
    if (is_output(t)) {
      stores.push_back(
          {"out_" + t.name(), t.dtype(), "v_" + t.name(), "pend_" + t.name(), false, outputs_staged});
    }
  }
  if (stage == 0) {
    for (const te::Tensor& output : plan_.program.outputs()) {
      if (plan_.role(output) == Role::kAnchor) {
        stores.push_back({"out_" + output.name(), output.dtype(), "acc[i]", "pend_" + output.name(), false,
                          outputs_staged});
      }
    }
  }
  if (schedule_.carried == ValueHome::kL2Stash && !schedule_.stash_terms) {  // stash_terms: write_tile_terms
    for (std::size_t c = 0; c < plan_.carried_tiles.size(); ++c) {
      const te::Tensor& t = plan_.carried_tiles[c];
      if (plan_.stage(t) != stage) continue;
      const std::string value = plan_.role(t) == Role::kAnchor ? "acc[i]" : "v_" + t.name();
      stores.push_back({"(stash + (size_t)" + std::to_string(c) + " * M * N)",
                        schedule::stash_dtype(schedule_), value, "pend_stash" + std::to_string(c), true,
                        schedule_.tma_store && schedule_.deferred()});
    }
  }
  return stores;
}

// Element i of the fragment to row-major [M, N] `array` at (grow, gcol). With N even, the two neighbouring
// columns a thread holds leave together from the odd element: one 32-bit store for 16-bit types, one 64-bit
// store for 32-bit ones, half the store instructions of element-wise stores.
void EpilogueEmitter::store(CodeStream& out, const Store& st) const {
  if (wide_rows()) {
    wide_store(out, st);
    return;
  }
  const std::string element = "(size_t)grow * N + gcol";
  const std::string value = store_value(st.dtype, st.value);
  // stash_evict_last: the main kernel's stash stores carry the L2 policy l2_keep (stash_keep_helpers); a
  // stash staged in the slot carries it on its TMA stores instead.
  const bool keep = st.to_stash && !st.staged && walk_ == Walk::kFragment && schedule_.stash_evict_last;
  const auto assign = [&](const std::string& type, const std::string& address, const std::string& word) {
    return keep ? "st_keep((" + type + "*)" + address + ", " + word + ", l2_keep)"
                : "*(" + type + "*)" + address + " = " + word;
  };
  if (!stores_in_pairs()) {
    if (keep) {
      out.line("if (inb) " +
               assign(memory_element_type(st.dtype), "&" + st.array + "[" + element + "]", value) + ";");
    } else {
      out.line("if (inb) " + st.array + "[" + element + "] = " + value + ";");
    }
    return;
  }
  if (st.staged && schedule_.stores_in_place()) {
    // Over the staged input's element pair at the same place of the tile (read in the first stage, not
    // since).
    out.line("if ((i & 1) == 0) " + st.pending + " = " + value + ";");
    out.line("else sts_u32(" + in_place_address() + ", (u32)" + st.pending + " | ((u32)" + value +
             " << 16));");
    return;
  }
  if (st.staged) {
    // Into the warpgroup's swizzled output tile (rows and columns past the edges are clipped by the store).
    out.line("if ((i & 1) == 0) " + st.pending + " = " + value + ";");
    out.line(
        "else *(u32*)((unsigned char*)stage_out + staged_offset(warp * 16 + (lane >> 2) + 8 * h, gcol - n0 - "
        "1)) = (u32)" +
        st.pending + " | ((u32)" + value + " << 16);");
    return;
  }
  const std::string first = "&" + st.array + "[" + element + " - 1]";
  std::string pair;
  if (te::dtype_bytes(st.dtype) == 2) {
    pair = assign("u32", first, "(u32)" + st.pending + " | ((u32)" + value + " << 16)");
  } else if (st.dtype == te::DType::i32) {
    pair = assign("int2", first, "make_int2(" + st.pending + ", " + value + ")");
  } else {
    pair = assign("float2", first, "make_float2(" + st.pending + ", " + value + ")");
  }
  out.line("if ((i & 1) == 0) " + st.pending + " = " + value + ";");
  out.line("else if (inb) " + pair + ";");
}

void EpilogueEmitter::element_loop(CodeStream& out, int stage) const {
  const std::vector<Store> stores = stores_of_stage(stage);
  if (wide_rows()) {
    declare_wide(out, stage, stores);
  } else if (stores_in_pairs()) {
    for (const Store& st : stores) out.line(memory_element_type(st.dtype) + " " + st.pending + " = 0;");
  }
  declare_pair_loads(out, stage);
  if (!schedule_.interior_tiles) {
    element_body(out, stage, stores, false);
    return;
  }
  out.open("if (" + interior_test() + ")");
  out.line("// The tile lies inside the matrix: the same loop without bounds tests.");
  element_body(out, stage, stores, true);
  out.close();
  out.open("else");
  element_body(out, stage, stores, false);
  out.close();
}

void EpilogueEmitter::declare_coordinates(CodeStream& out, bool interior) const {
  out.line(walk_ == Walk::kRow ? "constexpr int h = 0;" : "const int h = (i >> 1) & 1;");
  out.line("const int grow = " + row_of_h() + ";");
  out.line("const int gcol = " + column_of_i() + ";");
  out.line(interior ? "constexpr bool inb = true;" : "const bool inb = grow < M && gcol < N;");
  out.line("(void)inb;");
}

void EpilogueEmitter::update_partials(CodeStream& out, const std::vector<Slot>& slots,
                                      const ExprBindings& base, bool interior) const {
  for (const Slot& slot : slots) {
    ExprBindings bindings = base;
    bindings.vars[slot.owner->axes[0].get()] = "grow";
    bindings.vars[slot.node->axes[0].get()] = "gcol";
    if (slot.centered != nullptr) {
      centered_update(out, slot, emit_expr(slot.centered->value, bindings), interior);
      continue;
    }
    if (slot.rescaled != nullptr) {  // x lives in the terms' body, over their axes
      bindings.vars[slot.rescaled->terms->axes[0].get()] = "grow";
      bindings.vars[slot.rescaled->terms->axes[1].get()] = "gcol";
      const std::string value = emit_expr(slot.rescaled->value, bindings);
      if (schedule_.stash_terms) {  // the maximum alone: write_tile_terms sums the terms about it after
        const std::string max = slot_name(slot.stage, slot.index) + "_m[h]";
        out.line("if (inb) " + max + " = fmaxf(" + max + ", " + value + ");");
      } else {
        rescaled_update(out, slot, value);
      }
      continue;
    }
    const std::string name = slot_name(slot.stage, slot.index) + "[h]";
    out.line("if (inb) " + name + " = " + combine(slot.node->op, name, emit_expr(slot.node->body, bindings)) +
             ";");
  }
}

void EpilogueEmitter::element_body(CodeStream& out, int stage, const std::vector<Store>& stores,
                                   bool interior) const {
  const auto& tensors = plan_.program.tensors();
  auto element_coordinates = [&] { declare_coordinates(out, interior); };
  const std::vector<std::size_t> batched = batched_reads(stage);
  out.line("#pragma unroll");
  if (batched.empty()) {
    out.open("for (int i = 0; i < " + elements() + "; ++i)");
  } else {
    // A chunk of elements' re-reads first, all in flight at once; then the chunk's elements.
    int chunk_size = schedule::read_chunk(schedule_, batched.size());
    if (walk_ == Walk::kRow) chunk_size = std::min(chunk_size, schedule::kFinishRowElements);
    const std::string chunk = std::to_string(chunk_size);
    out.open("for (int i0 = 0; i0 < " + elements() + "; i0 += " + chunk + ")");
    for (std::size_t c : batched) out.line("float pre" + std::to_string(c) + "[" + chunk + "];");
    out.line("#pragma unroll");
    // Deep reads from an L2 stash: the two neighbouring columns (gcol even, N even) as one 64-bit load.
    const bool paired = schedule_.deep_reads && schedule_.carried == ValueHome::kL2Stash && stores_in_pairs();
    out.open("for (int j = 0; j < " + chunk + (paired ? "; j += 2)" : "; ++j)"));
    out.line("const int i = i0 + j;");
    element_coordinates();
    for (std::size_t c : batched) {
      const std::string pre = "pre" + std::to_string(c);
      if (paired) {
        const te::DType dtype = schedule::stash_dtype(schedule_);
        const std::string p = "p" + std::to_string(c);
        out.line("const " + pair_type(dtype) + " " + p + " = " + stash_pair_load(dtype, std::to_string(c)) +
                 ";");
        out.line(pre + "[j] = " + pair_half(dtype, p, false) + ";");
        out.line(pre + "[j + 1] = " + pair_half(dtype, p, true) + ";");
      } else {
        out.line(pre + "[j] = " + stash_load(c) + ";");
      }
    }
    out.close();
    out.line("#pragma unroll");
    out.open("for (int j = 0; j < " + chunk + "; ++j)");
    out.line("const int i = i0 + j;");
  }
  element_coordinates();
  // The TMA store's per-box steps, in the stage whose stores go to shared memory.
  const bool staged = std::any_of(stores.begin(), stores.end(), [](const Store& st) { return st.staged; });
  const bool chunked = schedule_.store_chunks && staged;
  const bool in_place = schedule_.stores_in_place() && staged;
  if (chunked) chunk_wait(out);
  emit_pair_loads(out, stage, interior);
  if (wide_rows()) emit_wide_loads(out, stage, interior);

  // Every tensor this stage can read, bound to a C expression.
  ExprBindings base = element_bindings();
  if (schedule_.stash_terms && walk_ == Walk::kRow) {  // one division a row, not one an element
    base.multiply_by_reciprocal = [this](const te::Expr& e) {
      return schedule::divides_by_row_value(plan_, e);
    };
  }
  for (const schedule::EpilogueInput& input : plan_.epilogue_inputs)
    base.reads[input.tensor.get()] = load(input.tensor, input.broadcast, interior);
  for (const te::Tensor& t : tensors) {
    if (t.is_placeholder()) continue;
    const Role role = plan_.role(t);
    const int produced = plan_.stage(t);
    if (role == Role::kAnchor) {
      base.reads[t.get()] = stage == 0 ? "acc[i]" : carried_read(t, !batched.empty());
    } else if (role == Role::kTile && produced < stage) {
      base.reads[t.get()] = carried_read(t, !batched.empty());
    } else if (role == Role::kRowValue) {
      base.reads[t.get()] = "row_" + t.name() + "[h]";
    }
  }
  // The tiles computed in this stage, in topological order.
  for (const te::Tensor& t : plan_.stages[stage].tiles) {
    ExprBindings bindings = base;
    bindings.vars[t->axes[0].get()] = "grow";
    bindings.vars[t->axes[1].get()] = "gcol";
    const bool stashed_terms =
        schedule_.stash_terms && walk_ == Walk::kRow && t.same_as(plan_.rescaled[0].terms);
    out.line("const " + value_type(t.dtype()) + " v_" + t.name() + " = " +
             (stashed_terms ? stashed_term(!batched.empty()) : emit_expr(t->body, bindings)) + ";");
    base.reads[t.get()] = "v_" + t.name();
  }
  for (const Store& st : stores) {
    if (!st.to_stash) store(out, st);
  }
  // Partial reductions over this thread's columns (with finish_reductions, the finish kernel's alone).
  if (!(schedule_.finish_reductions && walk_ == Walk::kFragment))
    update_partials(out, slots_of_stage(stage), base, interior);
  // Tiles computed here and read in a later stage.
  for (std::size_t c = 0; c < plan_.carried_tiles.size(); ++c) {
    const te::Tensor& t = plan_.carried_tiles[c];
    if (plan_.stage(t) != stage) continue;
    const std::string value = plan_.role(t) == Role::kAnchor ? "acc[i]" : "v_" + t.name();
    if (schedule_.carried == ValueHome::kRegisters && plan_.role(t) != Role::kAnchor) {
      // Over the accumulator element this iteration has read for the last time (carry_in_accumulator).
      const std::string home = schedule_.carry_in_accumulator ? "acc" : "carry_" + t.name();
      out.line(home + "[i] = " + value + ";");
    }
    if (schedule_.carried == ValueHome::kShared) {
      out.line(shared_stash_slot(c) + " = " + store_value(schedule::stash_dtype(schedule_), value) + ";");
    }
    if (schedule_.stash_terms && plan_.role(t) != Role::kAnchor) {
      out.line("acc[i] = " + value + ";  // x, for the tile's terms after the element loop");
    }
  }
  for (const Store& st : stores) {
    if (st.to_stash) store(out, st);
  }
  if (in_place) {
    out.open("if ((i & 31) == 31)");
    out.line(std::string("// Box i / 32 of the ") + (schedule_.deferred() ? "stash" : "output") +
             " is whole over the staged input: to the TMA engine, by one thread.");
    out.line("fence_proxy_async_shared();");
    out.line("warpgroup_sync(consumer);");
    out.open("if (store_leader)");
    // stash_evict_last (legal here only with the stash in the slot): its boxes carry the L2 policy l2_keep.
    const bool keep = schedule_.stash_evict_last;
    out.line(std::string(keep ? "tma_store_2d_keep(" : "tma_store_2d(") + stored_map() +
             ", sIn + in_slot * IN_SLOT_BYTES + " + std::to_string(in_place_offset()) +
             " + ((i >> 5) * BM + a_row0) * 128, n0 + 64 * (i >> 5), m0 + a_row0" +
             (keep ? ", l2_keep);" : ");"));
    out.line("bulk_commit();");
    out.close();
    out.close();
  }
  if (chunked) chunk_store(out);
  out.close();
  if (!batched.empty()) out.close();
}

void EpilogueEmitter::quad_combine(CodeStream& out, const std::vector<Slot>& slots) const {
  for (const Slot& slot : slots) {
    const std::string name = slot_name(slot.stage, slot.index);
    if (slot.centered != nullptr) {
      centered_finish_thread(out, slot);
      centered_quad_combine(out, slot);
      continue;
    }
    if (slot.rescaled != nullptr) {
      rescaled_quad_combine(out, slot);
      continue;
    }
    out.open("for (int h = 0; h < 2; ++h)");
    out.line("float v = " + name + "[h];");
    out.line("v = " + combine(slot.node->op, "v", "__shfl_xor_sync(0xffffffffu, v, 1)") + ";");
    out.line("v = " + combine(slot.node->op, "v", "__shfl_xor_sync(0xffffffffu, v, 2)") + ";");
    out.line(name + "[h] = v;");
    out.close();
  }
}

void EpilogueEmitter::end_stage(CodeStream& out, int stage) const {
  const std::vector<Slot> slots = slots_of_stage(stage);
  if (slots.empty()) return;
  out.line("// combine stage " + std::to_string(stage) +
           "'s row reductions: the quad of lanes sharing a row");
  quad_combine(out, slots);
  // Ping-pong warpgroups on a persistent grid take alternate row blocks: each owns its rows and exchanges
  // with the same warpgroup of its peers, through its own buffers.
  const bool own_rows = schedule_.alternate_row_blocks();
  const bool ping_pong = schedule_.warp_roles == schedule::WarpRoles::kPingPong && !own_rows;
  if (ping_pong) {
    out.line(
        "// ... then across the two ping-pong warpgroups, which own the same rows, through shared memory");
    out.open("");
    out.line("const int buf = wround & 1;");
    out.open("if ((lane & 3) == 0)");
    out.open("for (int h = 0; h < 2; ++h)");
    for (const Slot& slot : slots) {
      for (const auto& [offset, part] : exchanged(slot)) {
        out.line("wgx[((buf * 2 + consumer) * XSLOTS + " + std::to_string(slot.xslot + offset) +
                 ") * BM + local_row0 + 8 * h] = " + slot_name(slot.stage, slot.index) + part + "[h];");
      }
    }
    out.close();
    out.close();
    out.line("consumers_sync(256);");
    out.open("for (int h = 0; h < 2; ++h)");
    for (const Slot& slot : slots) {
      auto partial = [&](int warpgroup, int offset = 0) {
        return "wgx[((buf * 2 + " + std::to_string(warpgroup) + ") * XSLOTS + " +
               std::to_string(slot.xslot + offset) + ") * BM + local_row0 + 8 * h]";
      };
      if (partial_form(slot) != nullptr) {
        merged_start(out, slot, [&](const PartialForm::Part& part) { return partial(0, part.offset); });
        out.line(merged_combine(slot, [&](int offset) { return partial(1, offset); }));
        merged_store(out, slot);
        continue;
      }
      out.line(slot_name(slot.stage, slot.index) + "[h] = " + combine(slot.node->op, partial(0), partial(1)) +
               ";");
    }
    out.close();
    out.line("++wround;");
    out.close();
  }
  if (schedule_.cluster_n > 1) {
    if (schedule_.global_exchange) {
      global_exchange(out, stage, slots, own_rows, ping_pong);
    } else {
      dsmem_exchange(out, stage, slots, own_rows, ping_pong);
    }
  }
  // The reduction computes themselves, now that their reductions span whole rows.
  emit_row_values(out, plan_.stages[stage].reductions);
}

}  // namespace comfuse::codegen
