// The fused back-to-back kernel: GEMM1, the tiles between and GEMM2 in one kernel, the intermediate kept in
// registers and fed to GEMM2 as its A operand (docs/DESIGN.md, "The fused B2B kernel"). MLPs, and attention
// with its softmax in the online form the plan derives (running max, rescaled sums and accumulator, the final
// row factor); one batch axis; GEMM2 at most 256 columns wide.
#pragma once

#include <string>

#include "codegen/kernel_source.h"
#include "schedule/b2b_plan.h"

namespace comfuse::codegen {

struct B2BSchedule {
  int stages = 4;  // W1 boxes in flight (X is loaded once per CTA); W2 chunks are double-buffered
  // GEMM1 of the next chunk and GEMM2 of this one in flight while the next chunk's tiles between run (two
  // acc1 and operand buffers); off: each chunk's GEMMs are waited for before its tiles between.
  bool overlap = false;
  bool operator==(const B2BSchedule&) const = default;
};

/// Emits the fused kernel of `plan`. Its parameters are TMA descriptors of X (box [128, 64]), W1 ([64, 64])
/// and W2 ([O, 64] when laid out [O, N]; [64, 64] boxes when laid out [N, O], like attention's V), batched
/// operands through their 2-D views, and the outputs; it runs on FusedKernel like the single-GEMM kernels.
/// Throws CompileError naming what is not supported: more than one batch axis, W1 not laid out [N, K], O
/// above 256 or not a multiple of 8 (of 64 for [N, O]), K above 256 or not a multiple of 8, more than one
/// running max, tiles between that read inputs.
KernelSource emit_b2b_kernel(const schedule::B2BPlan& plan, const B2BSchedule& schedule,
                             const std::string& workload_key);

}  // namespace comfuse::codegen
