// Spearman's rank correlation, for the tests that hold the cost model's order against measured times.
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

namespace comfuse::search {

/// The rank of each value (0 for the smallest; ties in their order).
inline std::vector<double> ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> rank(values.size());
  for (std::size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<double>(r);
  return rank;
}

/// Spearman's rho of x and y (equal sizes, at least two).
inline double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size());
  double d2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d2 += (rx[i] - ry[i]) * (rx[i] - ry[i]);
  return 1 - 6 * d2 / (n * (n * n - 1));
}

}  // namespace comfuse::search
