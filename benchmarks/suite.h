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

/// Whether a row is among `only` (empty: every row), named by its workload (`post_layernorm`: all its
/// shapes) or by its instance name (`post_layernorm_M16384_K1024_N1024`).
bool selected(const SuiteEntry& entry, const std::vector<std::string>& only);

}  // namespace comfuse::bench
