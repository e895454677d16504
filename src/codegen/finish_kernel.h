// A deferred reduction's finish kernel: the second kernel of the source, launched after the fused kernel with
// the same parameters, a warp (or ROW_SPLIT warps) a row.
#pragma once

#include <map>
#include <string>

#include "codegen/code_stream.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"
#include "te/tensor.h"

namespace comfuse::codegen {

/// The finish kernel's view of `s`: its inputs come from global memory and its outputs go there (tma_inputs
/// and tma_store stage a tile's inputs and its stash for the main kernel only), and the wide finish loads
/// eight columns at once instead of in pairs or batches.
schedule::Schedule finish_schedule(const schedule::Schedule& s);

/// Emits the finish kernel `name` of `plan` under `s` (a deferred reduction) with the parameter list
/// `parameters`: the row each warp takes, then the row's partials combined and the last stage along it.
void emit_finish_kernel(CodeStream& out, const schedule::FusionPlan& plan, const schedule::Schedule& s,
                        const std::string& name, const std::string& parameters,
                        const std::map<const te::TensorNode*, std::string>& param_names);

}  // namespace comfuse::codegen
