// Online softmax: which reductions are sums of exponentials about a row value of the stage before, and the
// plan with them merged into that stage and their terms recomputed where they are read.
#include "schedule/rescaled_sums.h"

#include <gtest/gtest.h>

#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

using te::DType;
using te::Tensor;
using te::Var;

FusionPlan plan_of(const std::string& workload) {
  return plan_fusion(te::build_workload(workload, {{"M", 128}, {"K", 64}, {"N", 256}}));
}

TEST(RescaledSums, SoftmaxsSumMergesIntoTheMaxsStage) {
  for (const std::string workload : {"gemm_softmax", "gemm_softcap_softmax"}) {
    SCOPED_TRACE(workload);
    const FusionPlan plan = plan_of(workload);
    const std::vector<RescaledSum> found = find_rescaled_sums(plan);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].owner.name(), "sm_sum");
    EXPECT_EQ(found[0].terms.name(), "sm_exp");
    EXPECT_EQ(found[0].center.name(), "sm_max");
    ASSERT_EQ(plan.stages.size(), 3u);
    ASSERT_EQ(plan.carried_tiles.size(), 2u);
    const FusionPlan merged = merge_rescaled_sums(plan);
    ASSERT_EQ(merged.stages.size(), 2u);
    ASSERT_EQ(merged.stages[0].reductions.size(), 2u);
    EXPECT_EQ(merged.stages[0].reductions[1].name(), "sm_sum");
    // The terms come first among the last stage's tiles; only the max's input is carried.
    EXPECT_EQ(merged.stages[1].tiles[0].name(), "sm_exp");
    EXPECT_EQ(merged.stage(merged.stages[1].tiles[0]), 1);
    EXPECT_EQ(merged.stage(merged.stages[0].reductions[1]), 1);
    ASSERT_EQ(merged.carried_tiles.size(), 1u);
    EXPECT_EQ(merged.carried_tiles[0].name(), found[0].value.as<te::ReadNode>()->tensor->name);
    EXPECT_EQ(merged.rescaled.size(), 1u);
    EXPECT_TRUE(plan.rescaled.empty());
  }
}

TEST(RescaledSums, OtherReductionsStayWhereTheyAre) {
  for (const std::string workload : {"post_layernorm", "post_rmsnorm", "gemm"}) {
    SCOPED_TRACE(workload);
    const FusionPlan plan = plan_of(workload);
    EXPECT_TRUE(find_rescaled_sums(plan).empty());
    EXPECT_EQ(to_string(merge_rescaled_sums(plan)), to_string(plan));
  }
}

// A second consumer of the terms in their stage, or a sum of something else, keeps the plan as it is.
TEST(RescaledSums, NotRescaledSums) {
  const std::int64_t M = 64, K = 32, N = 96;
  auto X = te::placeholder({M, K}, DType::bf16, "X"), W = te::placeholder({N, K}, DType::bf16, "W");
  auto Y = te::matmul(X, W, te::BLayout::kColMajor, "Y");
  auto n1 = te::reduce_axis(N, "n1"), n2 = te::reduce_axis(N, "n2"), n3 = te::reduce_axis(N, "n3");
  auto top = te::compute(
      {M}, [&](Var i) { return te::max_reduce(Y(i, n1), {n1}); }, "top");
  auto e = te::compute(
      {M, N}, [&](Var i, Var j) { return te::exp(Y(i, j) - top(i)); }, "e");
  auto doubled = te::compute(
      {M}, [&](Var i) { return te::sum(e(i, n2) * 2.0, {n2}); }, "doubled");
  auto other = te::compute(
      {M}, [&](Var i) { return te::max_reduce(e(i, n3), {n3}); }, "other");
  auto plain = te::compute(
      {M}, [&](Var i) { return te::sum(e(i, n2), {n2}); }, "plain");
  EXPECT_TRUE(find_rescaled_sums(plan_fusion(te::Program({X, W}, {doubled}))).empty());
  // Two reductions of the terms in their stage: moving one would leave the terms behind.
  EXPECT_TRUE(find_rescaled_sums(plan_fusion(te::Program({X, W}, {plain, other}))).empty());
  EXPECT_EQ(find_rescaled_sums(plan_fusion(te::Program({X, W}, {plain}))).size(), 1u);
}

}  // namespace
}  // namespace comfuse::schedule
