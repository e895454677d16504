// A deferred reduction's finish kernel: which row each warp takes, and the kernel around the epilogue's
// finish_row (deferred_emitter.cc), which combines the row's partials and runs the last stage.
#include "codegen/finish_kernel.h"

#include <utility>
#include <vector>

#include "codegen/epilogue_emitter.h"
#include "codegen/expr_emitter.h"

namespace comfuse::codegen {

namespace {

// persistent_finish: the lanes of the warps that take a row ask L2 for the 128-byte lines of the stash's rows
// at `next` (each carried tile's), when there is a next row. The requests are unrolled: as a loop they took
// gelu-LN's finish kernel (N = 4096) from 122 registers to 238.
void prefetch_next_row(CodeStream& out, const schedule::FusionPlan& plan, const schedule::Schedule& s,
                       const std::string& next) {
  if (plan.carried_tiles.empty()) return;
  const std::int64_t row_bytes = plan.anchor.n * te::dtype_bytes(schedule::stash_dtype(s));
  const std::int64_t step =
      128 * 32 * (s.finish_row_split ? schedule::kFinishSplit : 1);  // bytes a request each
  out.line(
      "// The stash lines of this warp's next row, asked of L2 now: they stream in while it works on this "
      "row.");
  out.open("if (nth + stride < M)");
  out.line("const unsigned char* const next_row = (const unsigned char*)stash + (size_t)(" + next + ") * " +
           std::to_string(row_bytes) + ";");
  out.line(std::string("const int line = ") + (s.finish_row_split ? "(part * 32 + lane)" : "lane") +
           " * 128;");
  for (std::size_t c = 0; c < plan.carried_tiles.size(); ++c) {
    const std::string tile =
        c == 0 ? "" : " + " + std::to_string(c) + " * (size_t)M * " + std::to_string(row_bytes);
    for (std::int64_t k = 0; k * step < row_bytes; ++k) {
      const std::string offset = "line" + (k == 0 ? std::string() : " + " + std::to_string(k * step));
      const std::string request =
          R"(asm volatile("prefetch.global.L2 [%0];" :: "l"(next_row + )" + offset + tile + "));";
      out.line((k + 1) * step > row_bytes
                   ? "if (" + offset + " < " + std::to_string(row_bytes) + ") " + request
                   : request);
    }
  }
  out.close();
}

// persistent_finish: the names whose values are the same every row, the lane and the vectors the rows share
// (bias, gamma, beta: Broadcast::kRow inputs), with their element types ("int" for the lane). The loop over
// rows declares them again each row from a copy the compiler cannot see through. Left to itself it hoists
// every address of a lane's columns out of the loop: gelu-LN's N = 4096 finish went from 122 registers to
// 255 (one CTA an SM), and to 127 with these copies (169 with the lane's alone).
struct RowInvariant {
  std::string name;
  std::string type;  // as declared: "int", or a pointer to const elements
  bool pointer;
};

std::vector<RowInvariant> row_invariants(const schedule::FusionPlan& plan,
                                         const std::map<const te::TensorNode*, std::string>& param_names) {
  std::vector<RowInvariant> invariants = {{"lane", "int", false}};
  for (const schedule::EpilogueInput& input : plan.epilogue_inputs) {
    if (input.broadcast != schedule::Broadcast::kRow) continue;
    const auto it = param_names.find(input.tensor.get());
    if (it == param_names.end()) continue;
    invariants.push_back({it->second, "const " + memory_element_type(input.tensor.dtype()) + "*", true});
  }
  return invariants;
}

}  // namespace

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
  const std::string first = "blockIdx.x * " + std::to_string(schedule::finish_rows_per_cta(s)) +
                            (split ? " + threadIdx.x / (32 * ROW_SPLIT)" : " + threadIdx.x / 32");
  const auto declare_part = [&] {
    if (!split) return;
    out.line(
        "const int part = threadIdx.x / 32 % ROW_SPLIT;  // this warp takes every ROW_SPLIT-th step from "
        "it");
  };
  if (s.reverse_finish) {
    out.line(
        "// The last rows first: the main kernel wrote their stash last, and L2 still holds it when this "
        "kernel starts.");
  }
  const auto row_of = [&](const std::string& nth) {
    return s.reverse_finish ? "M - 1 - (" + nth + ")" : nth;
  };
  if (s.persistent_finish) {
    const std::vector<RowInvariant> invariants = row_invariants(plan, param_names);
    declare_part();
    for (const RowInvariant& v : invariants)
      out.line((v.pointer ? v.type + " const " : "const " + v.type + " ") + v.name + "_rows = " + v.name +
               ";");
    out.line("// As many CTAs as the device runs at once: each warp walks the rows a grid apart.");
    out.line("const int stride = gridDim.x * " + std::to_string(schedule::finish_rows_per_cta(s)) + ";");
    out.line("#pragma unroll 1");
    out.open("for (int nth = " + first + "; nth < M; nth += stride)");
    out.line(
        "// The same each row, but copied each row through a move the compiler cannot see through (above).");
    for (const RowInvariant& v : invariants) {
      const std::string mov = v.pointer ? "b64" : "u32", reg = v.pointer ? "l" : "r";
      out.line(v.type + " " + v.name + ";");
      out.line("asm volatile(\"mov." + mov + " %0, %1;\" : \"=" + reg + "\"(" + v.name + ") : \"" + reg +
               "\"(" + v.name + "_rows));");
    }
    out.line("const int row = " + row_of("nth") + ";");
    prefetch_next_row(out, plan, s, row_of("nth + stride"));
  } else {
    out.line("const int row = " + row_of(first) + ";");
    declare_part();
    out.line(s.reverse_finish ? "if (row < 0) return;" : "if (row >= M) return;");
  }
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
  if (s.persistent_finish) {
    // The warp's table of column-tile factors (stash_terms) is written again for its next row.
    if (s.stash_terms) out.line("__syncwarp();");
    out.close();
  }
  out.close();
}

}  // namespace comfuse::codegen
