// The fused kernels' GPU-test cases (fused_kernel_gpu_test.cc runs them a workload at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"
#include "te/program.h"
#include "te/workloads.h"

namespace comfuse::codegen::gpu_cases {

struct Case {
  std::string workload;
  te::Shape shape;
  schedule::Schedule schedule;
  std::string label;
  std::int64_t full_rows = 512;  // outputs up to this many rows are checked whole, larger ones on samples
};

/// The case's program at its shape.
te::Program build(const Case& c);
/// Whether check_legal accepts `s` for `plan`.
bool legal(const schedule::FusionPlan& plan, const schedule::Schedule& s);
/// Every case, in a fixed order (the variants after the cases they copy).
std::vector<Case> cases();

}  // namespace comfuse::codegen::gpu_cases
