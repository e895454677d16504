// `comfuse emit`: the fused kernel of a workload as CUDA source and cubin, on a machine without a GPU.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace comfuse::cli {

/// `emit WORKLOAD [--shape M=…] [--schedule FILE.json] [--target sm_90a] -o DIR`. Writes DIR/NAME.cu and
/// DIR/NAME.cubin and prints what it wrote. Returns 0, or 2 for bad arguments, an unfusable program or an
/// illegal schedule (the message says why), or 4 when NVRTC fails (with its log).
int run_emit(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace comfuse::cli
