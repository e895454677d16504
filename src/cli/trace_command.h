// `comfuse trace`: a fused kernel run once on the GPU with the phase trace on (codegen/phase_trace.h),
// checked against the CPU reference, and where each warpgroup's time went.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace comfuse::cli {

/// `trace WORKLOAD [--shape M=…] (--log FILE [--allow-target-mismatch] | --schedule JSON) [--launches N]
/// [--repeats N] [--seed N] [--json FILE]`. The schedule is the log's winner for the local GPU (as replay
/// picks it, another GPU's with --allow-target-mismatch) or the one given. The kernel is emitted with the
/// phase trace, launched N times (default 3) on fresh inputs with poisoned outputs, the last launch's outputs
/// checked against the CPU reference and its trace summarised on `out`; --json writes every record. Then the
/// kernel with and without the trace is timed (--repeats runs each, default 20; 0 skips it), to say what the
/// trace's stores cost. Returns 0; 2 for bad arguments, a workload without a fused-GEMM kernel, no record or
/// an illegal schedule; 3 when the outputs are wrong; 4 for CUDA and NVRTC failures, no GPU among them.
int run_trace(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace comfuse::cli
