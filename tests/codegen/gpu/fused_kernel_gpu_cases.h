// The fused kernels' GPU-test cases (fused_kernel_gpu_test.cc runs them a workload at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

// The steps that cases() builds its list with.

/// Appends a copy of each of the first `count` cases whose plan and schedule `applies` holds for, with
/// `turn_on` applied and `prefix` before the label (suite cases on the default schedule take it explicitly
/// first).
void add_variants(std::vector<Case>& result, std::size_t count, const std::string& prefix,
                  const std::function<bool(const schedule::FusionPlan&, const schedule::Schedule&)>& applies,
                  const std::function<void(schedule::Schedule&)>& turn_on);
/// The cases labelled `prefix` one pipeline stage deeper where that is legal: the stage that the shared
/// memory their knob freed makes room for.
void one_stage_deeper(std::vector<Case>& result, const std::string& prefix);
/// Appends the deferred forms of the cases so far and their knobs' variants
/// (fused_kernel_gpu_deferred_cases.cc); the first `base` cases are those before any knob's variants.
void add_deferred_variants(std::vector<Case>& result, std::size_t base);

}  // namespace comfuse::codegen::gpu_cases
