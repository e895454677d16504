// The kernels a workload is tuned as: the workload itself; or, for a back-to-back workload, its two parts and
// the fused back-to-back kernel where it is generated; or the fused kernel alone where there is no two-kernel
// plan (batched attention). `comfuse tune` and the suite's tuning both start here.
#pragma once

#include <string>
#include <vector>

#include "codegen/reference_check.h"
#include "te/program.h"
#include "te/workloads.h"

namespace comfuse::search {

struct TuningKernel {
  enum class Role : std::uint8_t {
    kWhole,       // the workload as one fused-GEMM kernel
    kFirstPart,   // GEMM1 with the tiles between, of a back-to-back workload run as two kernels
    kSecondPart,  // GEMM2 with its epilogue
    kFusedB2B,    // the whole back-to-back workload as the fused back-to-back kernel
  };
  Role role = Role::kWhole;
  te::Program program;
};

/// The kernels of workload `name` at `shape`, in the order above. Throws CompileError with the planner's
/// reason, and the fused kernel's where neither plan exists.
std::vector<TuningKernel> tuning_kernels(const std::string& name, const te::Shape& shape);

}  // namespace comfuse::search
