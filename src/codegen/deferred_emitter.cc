// Epilogue emission of deferred reductions (schedule placement `deferred`): the main kernel's tiles end with
// their row partials in a workspace; the finish kernel combines a row's partials over its column tiles and
// runs the stage after the reduction along the row.
#include <string>

#include "codegen/epilogue_emitter.h"
#include "codegen/epilogue_names.h"
#include "codegen/expr_emitter.h"
#include "support/error.h"

namespace comfuse::codegen {

namespace {

// Where float `x` of a row partial of column tile `tile` and row `row` lives in the workspace: at
// [x][tile][row], or with `by_row` (schedule.wide_finish) at [row][x][tile], a row's partials of each float
// side by side.
std::string part_at(int x, const std::string& tile, const std::string& row, bool by_row) {
  if (by_row)
    return "parts[((size_t)" + row + " * XSLOTS + " + std::to_string(x) + ") * N_TILES + " + tile + "]";
  return "parts[((size_t)" + std::to_string(x) + " * N_TILES + " + tile + ") * M + " + row + "]";
}

// A lane's words of a kept row a step: its 16-byte groups of eight (wide walk) or its column pairs.
std::string kept_words_per_step(bool wide) {
  return wide ? "(ROW_ELEMS / 8)" : "(ROW_ELEMS / 2)";
}

}  // namespace

const EpilogueEmitter::Slot& EpilogueEmitter::terms_slot() const {
  COMFUSE_CHECK(schedule_.stash_terms && plan_.rescaled.size() == 1, "stash_terms stashes one sum's terms");
  for (const Slot& slot : slots_) {
    if (slot.rescaled == &plan_.rescaled[0]) return slot;
  }
  throw InternalError("the rescaled sum of stash_terms has no reduction slot");
}

void EpilogueEmitter::write_tile_terms(CodeStream& out) const {
  COMFUSE_CHECK(walk_ == Walk::kFragment, "a tile's terms come from its fragments");
  const schedule::RescaledSum& sum = plan_.rescaled[0];
  const Slot& slot = terms_slot();
  const std::string name = slot_name(slot.stage, slot.index);
  // With tma_store the terms go to the warpgroup's staging tile, which the kernel then stores by TMA.
  const Store term{"stash", te::DType::bf16, "term", "pend_term", true, schedule_.tma_store};
  out.line("// The tile's terms exp(x - the tile's row maximum), summed and stored to the stash in bf16");
  out.line("// (stash_terms): the element loop kept x in the accumulator and took the maximum alone.");
  const bool chunked = schedule_.tma_store && schedule_.store_chunks;
  if (chunked)
    out.line(
        "// They go to the warpgroup's two staging boxes, each stored by TMA as it fills (store_chunks).");
  else if (schedule_.tma_store)
    out.line("// They go to the warpgroup's staging tile, which the TMA store writes out.");
  out.open("for (int h = 0; h < 2; ++h)");
  out.line("float m = " + name + "_m[h];");
  out.line("m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));");
  out.line("m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));");
  out.line(name + "_m[h] = m;");
  out.close();
  out.open("");
  if (stores_in_pairs()) out.line(memory_element_type(term.dtype) + " " + term.pending + " = 0;");
  out.line("#pragma unroll");
  out.open("for (int i = 0; i < " + elements() + "; ++i)");
  declare_coordinates(out, false);
  if (chunked) chunk_wait(out);
  ExprBindings bindings = element_bindings();
  bindings.vars[sum.terms->axes[0].get()] = "grow";
  bindings.vars[sum.terms->axes[1].get()] = "gcol";
  bindings.reads[plan_.carried_tiles[0].get()] = "acc[i]";
  bindings.reads[sum.center.get()] = name + "_m[h]";
  out.line("const float term = acc[i] == " + identity(te::ReduceOp::kMax) +
           " ? 0.0f : " + emit_expr(sum.terms->body, bindings) + ";  // a -inf x adds nothing");
  out.line("if (inb) " + name + "[h] += term;");
  store(out, term);
  if (chunked) chunk_store(out);
  out.close();
  out.close();
}

std::string EpilogueEmitter::stashed_term(bool batched) const {
  return "(" + carried_read(plan_.carried_tiles[0], batched) + " * (inb ? tile_factor[gcol / BN] : 0.0f))";
}

void EpilogueEmitter::write_tile_partials(CodeStream& out) const {
  COMFUSE_CHECK(walk_ == Walk::kFragment, "a tile's partials come from its fragments");
  const std::vector<Slot> slots = slots_of_stage(0);
  out.line(
      "// The tile's row partials: over the quad of lanes sharing a row, then to the workspace, where the");
  out.line("// finish kernel combines them with the row's other column tiles.");
  quad_combine(out, slots);
  out.open("if ((lane & 3) == 0)");
  out.open(rows_loop());
  out.line("const int grow = " + row_of_h() + ";");
  out.open("if (grow < M)");
  for (const Slot& slot : slots) {
    for (const auto& [offset, part] : exchanged(slot)) {
      out.line(part_at(slot.xslot + offset, "n0 / BN", "grow", schedule_.wide_finish) + " = " +
               slot_name(slot.stage, slot.index) + part + "[h];");
    }
  }
  out.close();
  out.close();
  out.close();
}

void EpilogueEmitter::declare_kept_row(CodeStream& out) const {
  for (std::size_t c : rereads(1)) {
    out.line(std::string(wide_rows() ? "uint4" : "u32") + " row_stash" + std::to_string(c) +
             "[(N + ROW_ELEMS / 2 * 64 - 1) / (ROW_ELEMS / 2 * 64) * " + kept_words_per_step(wide_rows()) +
             "];  // the row's stash as the first walk loaded it, for the second");
  }
}

std::string EpilogueEmitter::kept_word(std::size_t c) const {
  return "row_stash" + std::to_string(c) + "[n0 / (ROW_ELEMS / 2 * 64) * " +
         kept_words_per_step(wide_rows()) + " + (i >> " + (wide_rows() ? "3" : "1") + ")]";
}

void EpilogueEmitter::open_row_steps(CodeStream& out, const std::string& loop) const {
  if (row_stash_ != RowStash::kLoad) out.line("#pragma unroll  // the kept groups' indices are constants");
  out.open(loop);
}

void EpilogueEmitter::row_statistics(CodeStream& out) const {
  COMFUSE_CHECK(walk_ == Walk::kRow && schedule_.finish_reductions, "the finish kernel reduces its own rows");
  out.line(
      "// The row's first-stage reductions from its stash (finish_reductions): a lane over its columns,");
  out.line("// loading them as the last stage does (its own registers, in this scope).");
  out.open("");
  if (wide_rows()) declare_wide(out, 1, {});
  declare_pair_loads(out, 1);
  open_row_steps(out, "for (int n0 = 0; n0 < N; n0 += ROW_ELEMS / 2 * 64)");
  out.line("#pragma unroll");
  out.open("for (int i = 0; i < " + elements() + "; ++i)");
  declare_coordinates(out, false);
  emit_pair_loads(out, 1, false);
  if (wide_rows()) emit_wide_loads(out, 1, false);
  ExprBindings base = element_bindings();
  for (const schedule::EpilogueInput& input : plan_.epilogue_inputs)
    base.reads[input.tensor.get()] = load(input.tensor, input.broadcast, false);
  for (const te::Tensor& t : plan_.carried_tiles) base.reads[t.get()] = carried_read(t, false);
  update_partials(out, slots_of_stage(0), base, false);
  out.close();
  out.close();
  out.close();
  for (const Slot& slot : slots_of_stage(0)) {
    if (slot.centered != nullptr) centered_finish_thread(out, slot);
  }
}

void EpilogueEmitter::finish_row(CodeStream& out, const EpilogueEmitter* statistics) const {
  COMFUSE_CHECK(walk_ == Walk::kRow, "the finish kernel walks rows");
  COMFUSE_CHECK(schedule::deferrable(plan_), "a deferred reduction's plan has two stages");
  COMFUSE_CHECK((statistics != nullptr) == schedule_.finish_reductions,
                "the finish kernel's first walk is emitted exactly with finish_reductions");
  const std::vector<Slot> slots = slots_of_stage(0);
  declare_state(out);
  if (statistics != nullptr) {
    statistics->begin_stage(out, 0);
    if (row_stash_ == RowStash::kKept) declare_kept_row(out);
    statistics->row_statistics(out);
    out.line("// The lanes' partials combined over the warp; every lane takes lane 0's result, so that the");
    out.line("// whole row uses the same bits.");
  } else {
    out.line("// The row's partials of its N_TILES column tiles: a lane combines every 32nd, then the warp");
    out.line(
        "// combines its lanes; every lane takes lane 0's result, so that the whole row uses the same bits.");
  }
  out.open(rows_loop());
  for (const Slot& slot : slots) {
    const std::string name = slot_name(slot.stage, slot.index);
    out.open("");  // each slot's locals in their own scope
    if (partial_form(slot) != nullptr) {
      if (statistics == nullptr) {
        out.open("");
        merged_start(out, slot, [](const PartialForm::Part& part) { return part.identity; });
        out.open("for (int t = lane; t < N_TILES; t += 32)");
        out.line(merged_combine(slot, [&](int offset) {
          return part_at(slot.xslot + offset, "t", "row", schedule_.wide_finish);
        }));
        out.close();
        merged_store(out, slot);
        out.close();
      }
      out.line("#pragma unroll");
      out.open("for (int d = 16; d > 0; d /= 2)");
      merged_start(out, slot, [&](const PartialForm::Part& part) { return name + part.suffix + "[h]"; });
      out.line(merged_combine(slot, [&](int offset) {
        for (const auto& [o, suffix] : exchanged(slot)) {
          if (o == offset) return "__shfl_xor_sync(0xffffffffu, " + name + suffix + "[h], d)";
        }
        throw InternalError("merged partial without a float at offset " + std::to_string(offset));
      }));
      merged_store(out, slot);
      out.close();
      for (const auto& [offset, suffix] : exchanged(slot))
        out.line(name + suffix + "[h] = __shfl_sync(0xffffffffu, " + name + suffix + "[h], 0);");
      out.close();
      continue;
    }
    if (statistics != nullptr) {
      out.line("float v = " + name + "[h];");
    } else {
      out.line("float v = " + identity(slot.node->op) + ";");
      out.open("for (int t = lane; t < N_TILES; t += 32)");
      out.line("v = " + combine(slot.node->op, "v", part_at(slot.xslot, "t", "row", schedule_.wide_finish)) +
               ";");
      out.close();
    }
    out.line("#pragma unroll");
    out.open("for (int d = 16; d > 0; d /= 2)");
    out.line("v = " + combine(slot.node->op, "v", "__shfl_xor_sync(0xffffffffu, v, d)") + ";");
    out.close();
    out.line(name + "[h] = __shfl_sync(0xffffffffu, v, 0);");
    out.close();
  }
  out.close();
  emit_row_values(out, plan_.stages[0].reductions);
  if (schedule_.stash_terms) {
    const Slot& slot = terms_slot();
    int max_offset = -1;
    for (const auto& [offset, suffix] : exchanged(slot)) {
      if (suffix == "_m") max_offset = offset;
    }
    COMFUSE_CHECK(max_offset >= 0, "a rescaled sum's partial holds its maximum");
    out.line(
        "// Each column tile's factor exp(tile maximum - row maximum) for its stashed terms, in this warp's");
    out.line("// table (stash_terms).");
    out.line("__shared__ float tile_factors[" + std::to_string(schedule::kFinishThreads / 32) +
             "][N_TILES];");
    out.line("float* const tile_factor = tile_factors[threadIdx.x / 32];");
    out.open("for (int t = lane; t < N_TILES; t += 32)");
    out.line("tile_factor[t] = expf(" + part_at(slot.xslot + max_offset, "t", "row", schedule_.wide_finish) +
             " - row_" + plan_.rescaled[0].center.name() + "[0]);");
    out.close();
    out.line("__syncwarp();");
  }
  begin_stage(out, 1);
  open_row_steps(out, schedule_.finish_row_split ? "for (int n0 = part * (ROW_ELEMS / 2 * 64); n0 < N; n0 += "
                                                   "ROW_SPLIT * (ROW_ELEMS / 2 * 64))"
                                                 : "for (int n0 = 0; n0 < N; n0 += ROW_ELEMS / 2 * 64)");
  element_loop(out, 1);
  out.close();
}

}  // namespace comfuse::codegen
