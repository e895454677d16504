// The fused back-to-back kernel: GEMM1, the tiles between and GEMM2 in one kernel, the intermediate kept in
// registers and fed to GEMM2 as its A operand (docs/DESIGN.md, "The fused B2B kernel"). MLPs, and attention
// with its softmax in the online form the plan derives (running max, rescaled sums and accumulator, the final
// row factor); one batch axis; GEMM2 at most 256 columns wide.
#pragma once

#include <optional>
#include <string>

#include "codegen/b2b_support.h"
#include "codegen/kernel_source.h"
#include "schedule/b2b_plan.h"
#include "schedule/b2b_schedule.h"

namespace comfuse::codegen {

using schedule::B2BSchedule;  // schedule/b2b_schedule.h: the knobs, their legality and JSON

/// Emits the fused kernel of `plan`. Its parameters are TMA descriptors of X (box [128, 64]), W1 ([64, 64])
/// and W2 ([O, 64] when laid out [O, N]; [64, 64] boxes when laid out [N, O], like attention's V), batched
/// operands through their 2-D views, and the outputs; it runs on FusedKernel like the single-GEMM kernels.
/// Throws CompileError for what the kernel does not take (codegen/b2b_support.h) or an illegal schedule.
KernelSource emit_b2b_kernel(const schedule::B2BPlan& plan, const B2BSchedule& schedule,
                             const std::string& workload_key);

}  // namespace comfuse::codegen
