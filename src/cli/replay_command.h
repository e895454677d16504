// `comfuse replay`: the kernel a tuning log chose for a workload and a target, regenerated, checked against
// the log's source hash, and written as CUDA source and cubin (no GPU needed).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace comfuse::cli {

/// `replay --log FILE WORKLOAD [--shape M=…] [--target GPU] [--allow-target-mismatch] [--strict] -o DIR`.
/// Skipped log lines are warnings on `err` ("FILE:LINE: reason"); with --strict the first is an error.
/// Without --target the target is the local GPU 0, or "NVIDIA H200" from the log when there is no GPU.
/// Returns 0; 2 for bad arguments, an unreadable or (strict) malformed log, no record, a target mismatch or a
/// changed source (the message names why); 4 when NVRTC fails or a file cannot be written.
int run_replay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace comfuse::cli
