// A deferred reduction's finish kernel: which row each warp takes, and the kernel around the epilogue's
// finish_row (deferred_emitter.cc), which combines the row's partials and runs the last stage.
#include "codegen/finish_kernel.h"

#include "codegen/epilogue_emitter.h"

namespace comfuse::codegen {

schedule::Schedule finish_schedule(const schedule::Schedule& s) {
  schedule::Schedule finish = s;
  finish.tma_inputs = finish.tma_store = false;
  if (finish.wide_finish) finish.vector_loads = finish.batched_reads = finish.deep_reads = false;
  return finish;
}

void emit_finish_kernel(CodeStream& out, const schedule::FusionPlan& plan, const schedule::Schedule& s,
                        const std::string& name, const std::string& parameters,
                        const std::map<const te::TensorNode*, std::string>& param_names) {
  const bool kept = schedule::finish_row_in_registers(plan, s);
  schedule::Schedule finish = finish_schedule(s);              // outlives `rows`, which keeps a reference
  if (kept) finish.batched_reads = finish.deep_reads = false;  // the second walk loads no stash to batch
  EpilogueEmitter rows(plan, finish, param_names, EpilogueEmitter::Walk::kRow);
  if (kept) rows.set_row_stash(EpilogueEmitter::RowStash::kKept);
  out.line();
  out.line(s.finish_row_split ? "// The deferred reduction's finish kernel: ROW_SPLIT warps a row."
                              : "// The deferred reduction's finish kernel: one warp a row.");
  out.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(schedule::kFinishThreads) +
           ")");
  out.open(name + "(" + parameters + ")");
  out.line("const int lane = threadIdx.x & 31;");
  const bool split = s.finish_row_split;
  const std::string nth = "blockIdx.x * " + std::to_string(schedule::finish_rows_per_cta(s)) +
                          (split ? " + threadIdx.x / (32 * ROW_SPLIT)" : " + threadIdx.x / 32");
  if (s.reverse_finish) {
    out.line(
        "// The last rows first: the main kernel wrote their stash last, and L2 still holds it when this "
        "kernel starts.");
    out.line("const int row = M - 1 - (" + nth + ");");
  } else {
    out.line("const int row = " + nth + ";");
  }
  if (split) {
    out.line(
        "const int part = threadIdx.x / 32 % ROW_SPLIT;  // this warp takes every ROW_SPLIT-th step from "
        "it");
  }
  out.line(s.reverse_finish ? "if (row < 0) return;" : "if (row >= M) return;");
  out.line(std::string("const bool row_writer = lane == 0") + (split ? " && part == 0" : "") +
           ";  // writes row-value outputs");
  out.line("(void)row_writer;");
  if (s.finish_reductions) {
    // The first walk along the row, for its statistics, reads lines the second reads again (unless it keeps
    // them in registers): no streaming hint on its loads. It loads each element as it goes, never in chunks:
    // with batched reads as well, its stash values would have no pairs declared for them.
    schedule::Schedule first_walk = finish;
    first_walk.streaming_hints = first_walk.streaming_hints && kept;
    first_walk.batched_reads = first_walk.deep_reads = false;
    EpilogueEmitter statistics(plan, first_walk, param_names, EpilogueEmitter::Walk::kRow);
    if (kept) statistics.set_row_stash(EpilogueEmitter::RowStash::kLoadAndKeep);
    rows.finish_row(out, &statistics);
  } else {
    out.line("const float* const parts = (const float*)((const unsigned char*)stash + PARTS_BYTE);");
    rows.finish_row(out, nullptr);
  }
  out.close();
}

}  // namespace comfuse::codegen
