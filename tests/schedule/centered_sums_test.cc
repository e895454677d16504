// One-pass variance: which reductions are sums of squared deviations from a row value of the stage before,
// and the plan with them merged into that stage.
#include "schedule/centered_sums.h"

#include <gtest/gtest.h>

#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

using te::DType;
using te::Tensor;
using te::Var;

FusionPlan plan_of(const std::string& workload, std::int64_t n = 256) {
  return plan_fusion(te::build_workload(workload, {{"M", 128}, {"K", 64}, {"N", n}}));
}

TEST(CenteredSums, LayerNormsVarianceMergesIntoTheMeansStage) {
  for (const std::string workload : {"post_layernorm", "gemm_layernorm_relu", "gemm_gelu_layernorm"}) {
    SCOPED_TRACE(workload);
    const FusionPlan plan = plan_of(workload);
    const std::vector<CenteredSum> found = find_centered_sums(plan);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].owner.name(), "ln_var");
    EXPECT_EQ(found[0].center.name(), "ln_mean");
    const FusionPlan merged = merge_centered_sums(plan);
    // Three stages become two: mean and variance end stage 0, the normalisation is stage 1.
    ASSERT_EQ(plan.stages.size(), 3u);
    ASSERT_EQ(merged.stages.size(), 2u);
    ASSERT_EQ(merged.stages[0].reductions.size(), 2u);
    EXPECT_EQ(merged.stages[0].reductions[0].name(), "ln_mean");
    EXPECT_EQ(merged.stages[0].reductions[1].name(), "ln_var");
    EXPECT_EQ(merged.stage(merged.stages[0].reductions[1]), 1);
    EXPECT_EQ(merged.stage(merged.program.outputs()[0]), 1);
    EXPECT_EQ(merged.carried_tiles.size(), plan.carried_tiles.size());
    ASSERT_EQ(merged.centered.size(), 1u);
    EXPECT_TRUE(merged.has_reductions());
    // The original plan is untouched.
    EXPECT_TRUE(plan.centered.empty());
  }
}

TEST(CenteredSums, OtherReductionsStayWhereTheyAre) {
  for (const std::string workload : {"post_rmsnorm", "gemm_softmax", "gemm_softcap_softmax", "gemm"}) {
    SCOPED_TRACE(workload);
    const FusionPlan plan = plan_of(workload);
    EXPECT_TRUE(find_centered_sums(plan).empty());
    const FusionPlan merged = merge_centered_sums(plan);
    EXPECT_EQ(to_string(merged), to_string(plan));
    EXPECT_TRUE(merged.centered.empty());
  }
}

// mean and variance as the only outputs: the variance moves, the last (empty) stage where reductions end
// stays, and no tile needs carrying any more.
TEST(CenteredSums, StatisticsOnlyKeepTheirLastStage) {
  const std::int64_t M = 64, K = 32, N = 96;
  auto X = te::placeholder({M, K}, DType::bf16, "X"), W = te::placeholder({N, K}, DType::bf16, "W");
  auto Y = te::matmul(X, W, te::BLayout::kColMajor, "Y");
  auto n1 = te::reduce_axis(N, "n1"), n2 = te::reduce_axis(N, "n2");
  auto mean = te::compute(
      {M}, [&](Var i) { return te::sum(Y(i, n1), {n1}) * (1.0 / N); }, "mean");
  auto var = te::compute(
      {M}, [&](Var i) { return te::sum(te::pow(Y(i, n2) - mean(i), 2), {n2}); }, "var");
  const FusionPlan plan = plan_fusion(te::Program({X, W}, {mean, var}));
  ASSERT_EQ(plan.stages.size(), 3u);
  ASSERT_EQ(plan.carried_tiles.size(), 1u);  // Y, for the variance's pass
  const FusionPlan merged = merge_centered_sums(plan);
  ASSERT_EQ(merged.stages.size(), 2u);
  EXPECT_EQ(merged.stages[0].reductions.size(), 2u);
  EXPECT_TRUE(merged.stages[1].reductions.empty() && merged.stages[1].tiles.empty());
  EXPECT_TRUE(merged.carried_tiles.empty());
}

// Deviations from something other than a row value of the stage before, or with more in the sum, stay put.
TEST(CenteredSums, NotCenteredSums) {
  const std::int64_t M = 64, K = 32, N = 96;
  auto X = te::placeholder({M, K}, DType::bf16, "X"), W = te::placeholder({N, K}, DType::bf16, "W");
  auto b = te::placeholder({N}, DType::f32, "b");
  auto Y = te::matmul(X, W, te::BLayout::kColMajor, "Y");
  auto n1 = te::reduce_axis(N, "n1"), n2 = te::reduce_axis(N, "n2");
  auto mean = te::compute(
      {M}, [&](Var i) { return te::sum(Y(i, n1), {n1}) * (1.0 / N); }, "mean");
  auto cubed = te::compute(
      {M}, [&](Var i) { return te::sum(te::pow(Y(i, n2) - mean(i), 3), {n2}); }, "cubed");
  auto biased = te::compute(
      {M}, [&](Var i) { return te::sum(te::pow(Y(i, n2) - mean(i), 2) + b(n2), {n2}); }, "biased");
  auto weighted = te::compute(
      {M}, [&](Var i) { return te::sum(te::pow(Y(i, n2) - mean(i), 2), {n2}) * mean(i); }, "weighted");
  for (const Tensor& t : {cubed, biased, weighted}) {
    SCOPED_TRACE(t.name());
    const FusionPlan plan = plan_fusion(te::Program({X, W, b}, {mean, t}));
    EXPECT_TRUE(find_centered_sums(plan).empty());
  }
}

}  // namespace
}  // namespace comfuse::schedule
