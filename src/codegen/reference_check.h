// Checking a fused kernel's outputs against the CPU reference, on every row or on sampled row blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "te/host_buffer.h"
#include "te/interpreter.h"
#include "te/program.h"

namespace comfuse::codegen {

struct ReferenceCheck {
  bool ok = false;
  double max_rel_error = 0;     // the worst ||out - ref|| / ||ref|| over outputs and row blocks
  std::int64_t non_finite = 0;  // NaN/Inf elements in the checked rows
  std::string detail;           // one line per (output, row block)
};

/// The reference outputs of the row blocks a check compares: the whole output for small programs, else three
/// blocks of 64 rows. Computed once per workload and reused for every candidate kernel.
struct ReferenceRows {
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // (first row, rows)
  std::vector<std::vector<te::HostBuffer>> outputs;           // [block][output], program.outputs() order
  std::vector<std::string> output_names;
  std::int64_t rows = 0;  // M of the whole program
};

/// Evaluates the reference on `inputs` for the blocks a check compares, for any program whose outputs' first
/// axis is independent rows (of X, or batches of a batched program): whole up to `full_rows` rows, above
/// them three blocks of `block_rows` (first, middle, last), each evaluated as
/// te::row_block of the program on those rows of the inputs read by row (the others passed whole). Throws
/// CompileError (te::row_block's) when the rows depend on each other other than through their index.
ReferenceRows compute_reference(const te::Program& program, const std::vector<te::HostBuffer>& inputs,
                                std::int64_t full_rows = 512, std::int64_t block_rows = 64);

/// Compares `gpu_outputs` (whole outputs, program.outputs() order) with reference rows computed before.
ReferenceCheck check_outputs(const ReferenceRows& reference, const std::vector<te::HostBuffer>& gpu_outputs,
                             double tolerance = 1e-2);

/// Compares `gpu_outputs` (in program.outputs() order) with the reference evaluated on `inputs`. Programs of
/// at most `full_rows` rows are checked whole; larger ones on three blocks of 64 rows (first, middle, last)
/// (te::row_block). Passes when every block has no NaN/Inf and relative error <= `tolerance`.
ReferenceCheck check_against_reference(const te::Program& program, const std::vector<te::HostBuffer>& inputs,
                                       const std::vector<te::HostBuffer>& gpu_outputs,
                                       double tolerance = 1e-2, std::int64_t full_rows = 512);

}  // namespace comfuse::codegen
