// The README's post-LayerNorm example agrees with the op library's post_layernorm workload and with plain
// loops, on random inputs at an odd shape.
#include <gtest/gtest.h>

#include <cmath>

#include "post_layernorm_dsl.h"
#include "te/interpreter.h"
#include "te/workloads.h"

namespace comfuse::te {
namespace {

TEST(ReadmeExample, MatchesLibraryWorkloadAndLoops) {
  const std::int64_t M = 19, K = 37, N = 45;
  const Program example = examples::post_layernorm_program(M, K, N);
  const Program library = build_workload("post_layernorm", {{"M", M}, {"K", K}, {"N", N}});
  ASSERT_EQ(example.inputs().size(), library.inputs().size());
  std::vector<HostBuffer> inputs;
  for (std::size_t i = 0; i < example.inputs().size(); ++i) {
    const Tensor& t = example.inputs()[i];
    ASSERT_EQ(t.shape(), library.inputs()[i].shape()) << t.name();
    inputs.push_back(HostBuffer::random(t.dtype(), t.shape(), /*seed=*/100 + i));
  }
  const HostBuffer out = evaluate(example, inputs).at(0);
  const HostBuffer lib = evaluate(library, inputs).at(0);
  EXPECT_LT(compare(out, lib).rel_error, 1e-2);

  // Plain loops in double, inputs in the example's order X, W, b, R, gamma, beta.
  const auto &X = inputs[0], &W = inputs[1], &b = inputs[2], &R = inputs[3], &g = inputs[4], &be = inputs[5];
  double worst = 0;
  for (std::int64_t i = 0; i < M; ++i) {
    std::vector<double> z(N);
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (std::int64_t k = 0; k < K; ++k) acc += X.get(i * K + k) * W.get(j * K + k);
      z[j] = acc + b.get(j) + R.get(i * N + j);
      mean += z[j] / N;
    }
    for (std::int64_t j = 0; j < N; ++j) var += (z[j] - mean) * (z[j] - mean) / N;
    for (std::int64_t j = 0; j < N; ++j) {
      const double expected = (z[j] - mean) / std::sqrt(var + 1e-5) * g.get(j) + be.get(j);
      worst = std::max(worst, std::abs(out.get(i * N + j) - expected) / (1.0 + std::abs(expected)));
    }
  }
  EXPECT_LT(worst, 1.6e-2);  // bf16 output: 8 bits of mantissa
}

}  // namespace
}  // namespace comfuse::te
