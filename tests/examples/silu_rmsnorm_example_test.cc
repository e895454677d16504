// The tuning example's operator: it plans into one fused kernel (a reduction stage, the gated tile carried
// across it) and its reference agrees with plain loops.
#include <gtest/gtest.h>

#include <cmath>

#include "schedule/fusion_plan.h"
#include "silu_rmsnorm_dsl.h"
#include "te/interpreter.h"

namespace comfuse {
namespace {

TEST(SiluRmsnormExample, PlansAsOneFusedKernel) {
  const schedule::FusionPlan plan = schedule::plan_fusion(examples::silu_rmsnorm_program(300, 64, 96));
  EXPECT_EQ(plan.anchor.m, 300);
  EXPECT_EQ(plan.anchor.n, 96);
  EXPECT_EQ(plan.stages.size(), 2u);
  ASSERT_EQ(plan.carried_tiles.size(), 1u);
  EXPECT_EQ(plan.carried_tiles[0].name(), "gated");
}

TEST(SiluRmsnormExample, ReferenceMatchesPlainLoops) {
  const std::int64_t M = 7, K = 24, N = 40;
  const te::Program program = examples::silu_rmsnorm_program(M, K, N);
  std::vector<te::HostBuffer> inputs;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const te::Tensor& t = program.inputs()[i];
    inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), 11 + i));
  }
  const te::HostBuffer out = te::evaluate(program, inputs).at(0);
  const te::HostBuffer &X = inputs[0], &W = inputs[1], &b = inputs[2], &gamma = inputs[3];
  for (std::int64_t i = 0; i < M; ++i) {
    std::vector<double> gated(N);
    double ms = 0;
    for (std::int64_t j = 0; j < N; ++j) {
      double z = b.get(j);
      for (std::int64_t k = 0; k < K; ++k) z += X.get(i * K + k) * W.get(j * K + k);
      gated[j] = z / (1 + std::exp(-z));
      ms += gated[j] * gated[j] / N;
    }
    for (std::int64_t j = 0; j < N; ++j) {
      const double expected = gated[j] / std::sqrt(ms + 1e-6) * gamma.get(j);
      EXPECT_NEAR(out.get(i * N + j), expected, 1e-2 * (1 + std::abs(expected))) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace comfuse
