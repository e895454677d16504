// What the fused back-to-back kernel takes (codegen/b2b_emitter.h generates it): one batch axis, W1 laid out
// [N, K], GEMM2 at most 256 columns wide, K up to 256, one running max, tiles between that read no inputs.
#pragma once

#include <optional>
#include <string>

#include "schedule/b2b_plan.h"
#include "te/program.h"

namespace comfuse::codegen {

/// Throws CompileError naming what the fused kernel does not take: more than one batch axis, W1 not laid out
/// [N, K], O above 256 or not a multiple of 8 (of 64 for [N, O]), K above 256 or not a multiple of 8, more
/// than one running max, tiles between or epilogue computes that read inputs.
void check_b2b_supported(const schedule::B2BPlan& plan);

/// Why the fused back-to-back kernel cannot be generated for `program` (the planner's or the generator's
/// refusal, as emit_b2b_kernel would throw it), or nullopt when it can. Emits nothing.
std::optional<std::string> b2b_kernel_refusal(const te::Program& program);

}  // namespace comfuse::codegen
