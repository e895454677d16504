// The benchmark suite: workloads and shapes of the H200 baselines, plus GEMM alone at each shape.
#pragma once

#include <string>
#include <vector>

#include "te/workloads.h"

namespace comfuse::bench {

struct SuiteEntry {
  std::string workload;  // a te::workloads() name
  te::Shape shape;
  std::string baseline;  // the row's name in the baselines file, or empty
};

std::vector<SuiteEntry> suite();

}  // namespace comfuse::bench
