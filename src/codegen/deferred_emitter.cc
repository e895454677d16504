// Epilogue emission of deferred reductions (schedule placement `deferred`): the main kernel's tiles end with
// their row partials in a workspace; the finish kernel combines a row's partials over its column tiles and
// runs the stage after the reduction along the row.
#include <string>

#include "codegen/epilogue_emitter.h"
#include "codegen/epilogue_names.h"
#include "support/error.h"

namespace comfuse::codegen {

namespace {

// Where float `x` of a row partial of column tile `tile` and row `row` lives in the workspace.
std::string part_at(int x, const std::string& tile, const std::string& row) {
  return "parts[((size_t)" + std::to_string(x) + " * N_TILES + " + tile + ") * M + " + row + "]";
}

}  // namespace

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
      out.line(part_at(slot.xslot + offset, "n0 / BN", "grow") + " = " + slot_name(slot.stage, slot.index) +
               part + "[h];");
    }
  }
  out.close();
  out.close();
  out.close();
}

void EpilogueEmitter::finish_row(CodeStream& out) const {
  COMFUSE_CHECK(walk_ == Walk::kRow, "the finish kernel walks rows");
  COMFUSE_CHECK(schedule::deferrable(plan_), "a deferred reduction's plan has two stages");
  const std::vector<Slot> slots = slots_of_stage(0);
  declare_state(out);
  out.line("// The row's partials of its N_TILES column tiles: a lane combines every 32nd, then the warp");
  out.line(
      "// combines its lanes; every lane takes lane 0's result, so that the whole row uses the same bits.");
  out.open(rows_loop());
  for (const Slot& slot : slots) {
    const std::string name = slot_name(slot.stage, slot.index);
    out.open("");  // each slot's locals in their own scope
    if (partial_form(slot) != nullptr) {
      out.open("");
      merged_start(out, slot, [](const PartialForm::Part& part) { return part.identity; });
      out.open("for (int t = lane; t < N_TILES; t += 32)");
      out.line(merged_combine(slot, [&](int offset) { return part_at(slot.xslot + offset, "t", "row"); }));
      out.close();
      merged_store(out, slot);
      out.close();
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
    out.line("float v = " + identity(slot.node->op) + ";");
    out.open("for (int t = lane; t < N_TILES; t += 32)");
    out.line("v = " + combine(slot.node->op, "v", part_at(slot.xslot, "t", "row")) + ";");
    out.close();
    out.line("#pragma unroll");
    out.open("for (int d = 16; d > 0; d /= 2)");
    out.line("v = " + combine(slot.node->op, "v", "__shfl_xor_sync(0xffffffffu, v, d)") + ";");
    out.close();
    out.line(name + "[h] = __shfl_sync(0xffffffffu, v, 0);");
    out.close();
  }
  out.close();
  emit_row_values(out, plan_.stages[0].reductions);
  begin_stage(out, 1);
  out.open(schedule_.finish_row_split
               ? "for (int n0 = part * (ROW_ELEMS / 2 * 64); n0 < N; n0 += ROW_SPLIT * (ROW_ELEMS / 2 * 64))"
               : "for (int n0 = 0; n0 < N; n0 += ROW_ELEMS / 2 * 64)");
  element_loop(out, 1);
  out.close();
}

}  // namespace comfuse::codegen
