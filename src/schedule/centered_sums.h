// One-pass variance: sums of squared deviations from a row value, merged into the stage that produces the row
// value (the schedule knob one_pass_variance).
#pragma once

#include <vector>

#include "schedule/fusion_plan.h"

namespace comfuse::schedule {

/// The reductions of `plan` that merge_centered_sums can move: a row value whose body holds one reduce node,
/// sum_j (x[i, j] - m[i])^2 over one column axis, where x reads only tiles computed by stage s, m is a row
/// value among stage s's reductions, and the body reads nothing else; the reduction sits in stage s + 1.
std::vector<CenteredSum> find_centered_sums(const FusionPlan& plan);

/// `plan` with every reduction find_centered_sums lists moved into the stage of its center and listed in
/// `centered`; a stage left empty disappears, and the carried tiles are recomputed. Returns the plan
/// unchanged when there is none.
FusionPlan merge_centered_sums(const FusionPlan& plan);

}  // namespace comfuse::schedule
