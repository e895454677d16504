// The cost model ranks by the effects it models, and calibration rescales by what was measured.
#include "search/cost_model.h"

#include <gtest/gtest.h>

#include "te/workloads.h"

namespace comfuse::search {
namespace {

schedule::FusionPlan plan_of(const std::string& workload, const te::Shape& shape) {
  return schedule::plan_fusion(te::build_workload(workload, shape));
}

TEST(CostModel, TimeGrowsWithTheContraction) {
  const schedule::Schedule s;
  const double short_k = estimate(plan_of("gemm", {{"M", 8192}, {"K", 1024}, {"N", 4096}}), s).total_us;
  const double long_k = estimate(plan_of("gemm", {{"M", 8192}, {"K", 4096}, {"N", 4096}}), s).total_us;
  EXPECT_GT(long_k, 3 * short_k);
  EXPECT_LT(long_k, 5 * short_k);
}

TEST(CostModel, LargeGemmNearTheTensorCoreRoof) {
  const schedule::FusionPlan plan = plan_of("gemm", {{"M", 8192}, {"K", 8192}, {"N", 8192}});
  schedule::Schedule s;
  s.bn = 256;
  const CostEstimate e = estimate(plan, s);
  const double floor_us = 2.0 * 8192 * 8192 * 8192 / (760e6);
  EXPECT_GT(e.total_us, floor_us);
  EXPECT_LT(e.total_us, 1.3 * floor_us);
}

TEST(CostModel, PingPongHidesAStashingEpilogue) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 8192}, {"K", 1024}, {"N", 4096}});
  schedule::Schedule cooperative;
  cooperative.bm = 64;
  cooperative.carried = schedule::ValueHome::kL2Stash;
  schedule::Schedule ping_pong = cooperative;
  ping_pong.warp_roles = schedule::WarpRoles::kPingPong;
  EXPECT_LT(estimate(plan, ping_pong).total_us, estimate(plan, cooperative).total_us);
}

TEST(CostModel, FewCtasLeaveSmsIdle) {
  // M=1024 at BM=128 gives 8 row blocks: a CTA per row block uses 8 SMs, a cluster of 8 uses 64.
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 1024}, {"K", 4096}, {"N", 1024}});
  schedule::Schedule alone;
  alone.carried = schedule::ValueHome::kL2Stash;
  schedule::Schedule cluster = alone;
  cluster.cluster_n = 8;
  cluster.reduction = schedule::ReductionPlacement::kCluster;
  EXPECT_LT(estimate(plan, cluster).total_us * 3, estimate(plan, alone).total_us);
}

TEST(CostModel, CalibrationScalesByFamilyThenOverall) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 8192}, {"K", 1024}, {"N", 4096}});
  CalibratedModel model(plan, MachineModel{});
  schedule::Schedule a;
  a.carried = schedule::ValueHome::kL2Stash;
  schedule::Schedule b = a;
  b.bn = 256;  // same family as a
  schedule::Schedule c = a;
  c.bm = 64;
  c.warp_roles = schedule::WarpRoles::kPingPong;  // another family
  const double raw_b = model.predict_us(b), raw_c = model.predict_us(c);
  model.observe(a, 2 * estimate(plan, a).total_us);
  EXPECT_NEAR(model.predict_us(b), 2 * raw_b, 1e-9 * raw_b);
  EXPECT_NEAR(model.predict_us(c), 2 * raw_c, 1e-9 * raw_c);  // no measurement of its family: overall
  model.observe(c, 0.5 * estimate(plan, c).total_us);
  EXPECT_NEAR(model.predict_us(c), 0.5 * raw_c, 1e-9 * raw_c);
  EXPECT_NEAR(model.predict_us(b), 2 * raw_b, 1e-9 * raw_b);
}

}  // namespace
}  // namespace comfuse::search
