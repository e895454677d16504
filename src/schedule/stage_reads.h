// What an expression reads, relative to the stages of a plan: the queries the reduction merges share.
#pragma once

#include <optional>

#include "schedule/fusion_plan.h"

namespace comfuse::schedule {

/// The row value `e` is a read of (through a cast), indexed by exactly `row`, when it is one of the
/// reductions of stage `stage`; nullopt otherwise.
std::optional<te::Tensor> reduced_row_value(const FusionPlan& plan, const te::Expr& e, const te::VarNode* row,
                                            int stage);

/// Whether `e` reads at least one tensor, and only tiles (or the anchor) computed by stage `stage`.
bool reads_tiles_up_to(const FusionPlan& plan, const te::Expr& e, int stage);

}  // namespace comfuse::schedule
