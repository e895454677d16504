// Helpers of the schedule legality tests: a suite workload's plan, and the CompileError message that a
// schedule (or any call) raises.
#pragma once

#include <functional>
#include <string>

#include "schedule/schedule.h"
#include "support/error.h"
#include "te/workloads.h"

namespace comfuse::schedule::legality_error_test {

inline FusionPlan plan_of(const std::string& workload, std::int64_t m, std::int64_t k, std::int64_t n) {
  return plan_fusion(te::build_workload(workload, {{"M", m}, {"K", k}, {"N", n}}));
}

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CompileError& error) {
    return error.what();
  }
  return "(no error)";
}

inline std::string legality_error(const FusionPlan& plan, const std::function<void(Schedule&)>& edit,
                                  const TargetLimits& limits = {}) {
  Schedule s;
  edit(s);
  return error_of([&] { check_legal(plan, s, limits); });
}

// A layer norm deferred to a finish kernel: two stages (the mean and variance in one pass, then the
// normalised row), the carried tile in the L2 stash.
inline void defer_layer_norm(Schedule& s) {
  s.reduction = ReductionPlacement::kDeferred;
  s.carried = ValueHome::kL2Stash;
  s.one_pass_variance = true;
}

}  // namespace comfuse::schedule::legality_error_test
