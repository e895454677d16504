// The fused back-to-back kernel: GEMM1, the tiles between and GEMM2 in one kernel, the intermediate kept in
// registers and fed to GEMM2 as its A operand (docs/DESIGN.md, "The fused B2B kernel"). First version: MLPs
// (no reduction over the chained axis), GEMM2 at most 256 columns wide.
#pragma once

#include <string>

#include "codegen/kernel_source.h"
#include "schedule/b2b_plan.h"

namespace comfuse::codegen {

struct B2BSchedule {
  int stages = 4;  // GEMM1 operand stages (X and W1 boxes of 64 K-columns); W2 chunks are double-buffered
  bool operator==(const B2BSchedule&) const = default;
};

/// Emits the fused kernel of `plan`. Its parameters are TMA descriptors of X (box [128, 64]), W1 ([64, 64])
/// and W2 ([O, 64]) and the outputs; it runs on FusedKernel like the single-GEMM kernels. Throws
/// CompileError naming what is not supported yet: batched contractions, online statistics (attention), a
/// final row factor, operands not laid out [rows, K], O above 256 or not a multiple of 8, K or N not a
/// multiple of 8, tiles between that read other inputs, or epilogue computes that read anything but GEMM2.
KernelSource emit_b2b_kernel(const schedule::B2BPlan& plan, const B2BSchedule& schedule,
                             const std::string& workload_key);

}  // namespace comfuse::codegen
