// Online softmax: sums of exponentials about a row maximum, merged into the stage that produces the maximum
// (the schedule knob online_softmax).
#pragma once

#include <vector>

#include "schedule/fusion_plan.h"

namespace comfuse::schedule {

/// The reductions of `plan` that merge_rescaled_sums can move: a row value whose body holds one reduce node,
/// sum_j e[i, j] over one column axis, reading nothing else, where the tile e = exp(x - m) is all that stage
/// s + 1 computes besides the reduction, x reads only tiles computed by stage s, and m is a row value among
/// stage s's reductions.
std::vector<RescaledSum> find_rescaled_sums(const FusionPlan& plan);

/// `plan` with every reduction find_rescaled_sums lists moved into the stage of its center and listed in
/// `rescaled`, its tile e moved into the stage after (where it is read), the stage left empty dropped and the
/// carried tiles recomputed. Returns the plan unchanged when there is none.
FusionPlan merge_rescaled_sums(const FusionPlan& plan);

}  // namespace comfuse::schedule
