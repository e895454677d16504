// The schedule: the default heuristic is legal for every workload and shape, the JSON form round-trips, and
// the shared-memory estimate legality uses (the knobs' own rules: knob_rules_test.cc).
#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include "support/error.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

FusionPlan plan_of(const std::string& workload, std::int64_t m, std::int64_t k, std::int64_t n) {
  return plan_fusion(te::build_workload(workload, {{"M", m}, {"K", k}, {"N", n}}));
}

const std::vector<std::string>& fused_workloads() {
  static const std::vector<std::string> names = {"gemm",         "gemm_bias_relu",      "post_layernorm",
                                                 "post_rmsnorm", "gemm_layernorm_relu", "gemm_gelu_layernorm",
                                                 "gemm_softmax", "gemm_softcap_softmax"};
  return names;
}

struct MKN {
  std::int64_t m, k, n;
};

// Suite shapes, reduced shapes and odd shapes.
const std::vector<MKN>& shapes() {
  static const std::vector<MKN> list = {
      {16384, 1024, 1024}, {4096, 4096, 32000}, {8192, 4096, 4096}, {4096, 1024, 8192},  // suite
      {256, 128, 512},     {128, 64, 256},      {64, 64, 64},                            // reduced
      {1, 40, 1000},       {127, 72, 257},      {1, 8, 1},          {300, 16, 2056},     // odd
  };
  return list;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

TEST(DefaultSchedule, LegalForEveryWorkloadAndShape) {
  for (const std::string& workload : fused_workloads()) {
    for (const MKN& shape : shapes()) {
      SCOPED_TRACE(workload + " M=" + std::to_string(shape.m) + " K=" + std::to_string(shape.k) +
                   " N=" + std::to_string(shape.n));
      const FusionPlan plan = plan_of(workload, shape.m, shape.k, shape.n);
      Schedule s;
      ASSERT_NO_THROW(s = default_schedule(plan));
      EXPECT_NO_THROW(check_legal(plan, s));
      EXPECT_LE(s.shared_memory_bytes(), TargetLimits{}.max_shared_memory_per_block);
      if (!plan.has_reductions()) continue;
      // The invariants the heuristic keeps for plans with reductions.
      // Registers when a cluster holds a row in one tile per CTA (cooperative); else ping-pong over a stash.
      EXPECT_EQ(s.warp_roles,
                s.carried == ValueHome::kRegisters ? WarpRoles::kCooperative : WarpRoles::kPingPong);
      EXPECT_EQ(s.reduction, s.cluster_n > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta);
      EXPECT_LE(s.cluster_n, ceil_div(shape.n, s.bn));
      if (s.carried == ValueHome::kRegisters) {
        EXPECT_EQ(ceil_div(ceil_div(shape.n, s.bn), s.cluster_n), 1);
      }
    }
  }
}

TEST(DefaultSchedule, PinnedChoices) {
  const struct {
    std::string workload;
    MKN shape;
    std::string schedule;
  } cases[] = {
      {"gemm",
       {8192, 4096, 4096},
       "BM=128 BN=256 BK=64 stages=4 cluster_n=1 cooperative reduction=cta carried=registers "
       "raster_group_m=8"},
      {"gemm_bias_relu",
       {64, 64, 64},
       "BM=128 BN=128 BK=64 stages=4 cluster_n=1 cooperative reduction=cta carried=registers "
       "raster_group_m=8"},
      {"post_layernorm",
       {16384, 1024, 1024},
       "BM=128 BN=128 BK=64 stages=4 cluster_n=8 cooperative reduction=cluster carried=registers "
       "raster_group_m=8"},
      {"post_rmsnorm",
       {4096, 4096, 32000},
       "BM=64 BN=128 BK=64 stages=4 cluster_n=4 ping_pong reduction=cluster carried=l2_stash "
       "raster_group_m=8"},
      {"gemm_layernorm_relu",
       {1, 40, 1000},
       "BM=128 BN=128 BK=64 stages=4 cluster_n=8 cooperative reduction=cluster carried=registers "
       "raster_group_m=8"},
      {"gemm_softmax",
       {127, 72, 257},
       "BM=128 BN=80 BK=64 stages=4 cluster_n=4 cooperative reduction=cluster carried=registers "
       "raster_group_m=8"},
      // One column tile: a CTA owns whole rows and no cluster is needed; the tile is as wide as the row.
      {"post_rmsnorm",
       {64, 64, 64},
       "BM=128 BN=64 BK=64 stages=4 cluster_n=1 cooperative reduction=cta carried=registers "
       "raster_group_m=8"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.workload);
    EXPECT_EQ(to_string(default_schedule(plan_of(c.workload, c.shape.m, c.shape.k, c.shape.n))), c.schedule);
  }
}

TEST(DefaultSchedule, RespectsTighterTargetLimits) {
  const FusionPlan plan = plan_of("post_layernorm", 1, 40, 1000);
  TargetLimits limits;
  limits.max_cluster_size = 2;
  // The heuristic's cluster of 8 would exceed the limit: it must stay within it (or fail loudly, never
  // return an illegal schedule).
  try {
    const Schedule s = default_schedule(plan, limits);
    EXPECT_LE(s.cluster_n, 2);
    EXPECT_NO_THROW(check_legal(plan, s, limits));
  } catch (const CompileError& error) {
    ADD_FAILURE() << "default_schedule failed under a cluster limit of 2: " << error.what();
  }
}

TEST(Schedule, LegalCornerCases) {
  const FusionPlan gemm = plan_of("gemm", 256, 128, 512);
  Schedule s;
  s.bm = 64;
  s.warp_roles = WarpRoles::kPingPong;
  EXPECT_NO_THROW(check_legal(gemm, s));
  for (int bn : {16, 48, 64, 128, 176, 256}) {
    s = Schedule{};
    s.bn = bn;
    EXPECT_NO_THROW(check_legal(gemm, s)) << "BN=" << bn;
  }
  s = Schedule{};
  s.stages = 2;
  EXPECT_NO_THROW(check_legal(gemm, s));
  s.stages = 8;
  s.bm = 64;
  s.bn = 64;
  EXPECT_NO_THROW(check_legal(gemm, s));

  // Reductions over a cluster of 4 CTAs, each owning one column tile, carried tiles in registers.
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  s = Schedule{};
  s.cluster_n = 4;
  s.reduction = ReductionPlacement::kCluster;
  EXPECT_NO_THROW(check_legal(ln, s));
  s.carried = ValueHome::kL2Stash;
  EXPECT_NO_THROW(check_legal(ln, s));
  // Several column tiles per CTA with the stash.
  s = Schedule{};
  s.carried = ValueHome::kL2Stash;
  EXPECT_NO_THROW(check_legal(ln, s));
  // In shared memory: 4 tiles of 128 x 128 f32 (256 KB) do not fit beside the ring, 2 of 64 x 128 do.
  s.carried = ValueHome::kShared;
  EXPECT_THROW(check_legal(ln, s), CompileError);
  s.bm = 64;
  s.warp_roles = WarpRoles::kPingPong;
  s.cluster_n = 2;
  s.reduction = ReductionPlacement::kCluster;
  EXPECT_EQ(shared_stash_bytes(ln, s), 2 * 64 * 128 * 4);
  EXPECT_NO_THROW(check_legal(ln, s));
  // The stash in bf16: half the shared bytes; without a stash the knob is refused.
  s.bf16_stash = true;
  EXPECT_EQ(shared_stash_bytes(ln, s), 2 * 64 * 128 * 2);
  EXPECT_NO_THROW(check_legal(ln, s));
  s.carried = ValueHome::kRegisters;
  s.cluster_n = 4;
  EXPECT_THROW(check_legal(ln, s), CompileError);
  EXPECT_FALSE(schedule::bf16_stash_applies(ln, s));
  s.carried = ValueHome::kL2Stash;
  EXPECT_TRUE(schedule::bf16_stash_applies(ln, s));
  EXPECT_EQ(schedule::stash_dtype(s), te::DType::bf16);
  // A cluster of 8 under a limit of 16.
  s = Schedule{};
  s.bn = 64;
  s.cluster_n = 8;
  s.reduction = ReductionPlacement::kCluster;
  TargetLimits limits;
  limits.max_cluster_size = 16;
  EXPECT_NO_THROW(check_legal(ln, s, limits));
}

TEST(Schedule, SharedMemoryBytes) {
  Schedule s;  // BM=128 BN=128 stages=4, cooperative (two consumer warpgroups)
  // 1024 alignment + 4 * 256 * 64 * 2 ring + 2 * 8 * 4 + 64 barriers; no cluster, no ping-pong: no scratch
  EXPECT_EQ(s.shared_memory_bytes(), 1024 + 131072 + 128);
  s.warp_roles = WarpRoles::kPingPong;
  s.bm = 64;
  // Ping-pong warpgroups combine row partials: 2 buffers x 2 warpgroups x 64 rows of f32.
  EXPECT_EQ(s.shared_memory_bytes(), 1024 + 4 * 192 * 128 + 128 + 4 * 64 * 2 * 2);
  s.warp_roles = WarpRoles::kCooperative;
  s.bm = 64;
  s.bn = 256;
  s.stages = 3;
  s.cluster_n = 8;
  EXPECT_EQ(s.shared_memory_bytes(), 1024 + 3 * 320 * 128 + 48 + 64 + 4 * 64 * 8 * 2);
  // Three reductions ending one stage: three row partials per peer in the cluster exchange.
  EXPECT_EQ(s.shared_memory_bytes(/*row_reductions=*/3), 1024 + 3 * 320 * 128 + 48 + 64 + 4 * 64 * 8 * 3 * 2);
  EXPECT_EQ(s.shared_memory_bytes(/*row_reductions=*/0), s.shared_memory_bytes());
  EXPECT_EQ(s.consumer_warpgroups(), 1);
  EXPECT_EQ(s.threads(), 256);
  s.warp_roles = WarpRoles::kPingPong;
  EXPECT_EQ(s.consumer_warpgroups(), 2);
  EXPECT_EQ(s.threads(), 384);
}

std::vector<Schedule> spread_of_schedules() {
  std::vector<Schedule> list;
  list.push_back(Schedule{});
  Schedule s;
  s.bm = 64;
  s.bn = 256;
  s.stages = 2;
  s.warp_roles = WarpRoles::kPingPong;
  s.raster_group_m = 1;
  list.push_back(s);
  s = Schedule{};
  s.bn = 48;
  s.stages = 8;
  s.cluster_n = 8;
  s.reduction = ReductionPlacement::kCluster;
  s.carried = ValueHome::kL2Stash;
  s.raster_group_m = 64;
  list.push_back(s);
  // Out-of-range values are representable: legality, not the JSON form, rejects them.
  s = Schedule{};
  s.bm = 96;
  s.bk = 32;
  s.cluster_n = 3;
  s.stages = 0;
  s.raster_group_m = -1;
  list.push_back(s);
  return list;
}

TEST(Schedule, KnobsThatRoundWithinAnUlpAreToldApart) {
  // A division by a constant as a multiplication rounds within an ulp; SFU exp and tanh, or a bf16 stash,
  // round further, and a workload's tolerance may refuse them.
  Schedule s;
  s.reciprocal_division = true;
  EXPECT_TRUE(rounds(s));
  EXPECT_FALSE(rounds_past_an_ulp(s));
  s.approximate_math = true;
  EXPECT_TRUE(rounds_past_an_ulp(s));
  s = Schedule{};
  s.bf16_stash = true;
  EXPECT_TRUE(rounds_past_an_ulp(s));
  s = Schedule{};
  s.persistent = true;  // moves values, rounds none
  EXPECT_FALSE(rounds(s));
  EXPECT_FALSE(rounds_past_an_ulp(s));
  for (const OptionalKnob& knob : optional_knobs())
    EXPECT_TRUE(knob.rounds || !knob.within_an_ulp)
        << knob.name << ": within an ulp of rounding, yet not rounding";
}

TEST(ScheduleJson, RoundTrip) {
  for (const Schedule& s : spread_of_schedules()) {
    SCOPED_TRACE(to_string(s));
    const nlohmann::json json = to_json(s);
    EXPECT_EQ(schedule_from_json(json), s);
    // Through text too, as in a tuning log.
    EXPECT_EQ(schedule_from_json(nlohmann::json::parse(json.dump())), s);
    EXPECT_EQ(to_json(schedule_from_json(json)).dump(), json.dump());
  }
  // Every field takes part in equality.
  Schedule a, b;
  b.raster_group_m = 4;
  EXPECT_NE(a, b);
  b = a;
  b.carried = ValueHome::kL2Stash;
  EXPECT_NE(a, b);
  b = a;
  b.persistent = true;
  EXPECT_NE(a, b);
  b = a;
  b.deep_reads = true;
  EXPECT_NE(a, b);
  b.batched_reads = true;
  EXPECT_EQ(schedule_from_json(nlohmann::json::parse(to_json(b).dump())), b);
  EXPECT_EQ(to_string(b), to_string(a) + " batched_reads deep_reads");
}

TEST(ScheduleJson, PersistentIsWrittenOnlyWhenSet) {
  // Schedules logged before the knob existed have no field and replay with the one-tile grid.
  EXPECT_FALSE(to_json(Schedule{}).contains("persistent"));
  EXPECT_FALSE(schedule_from_json(to_json(Schedule{})).persistent);
  Schedule s;
  s.persistent = true;
  EXPECT_EQ(to_json(s).at("persistent"), true);
  EXPECT_EQ(schedule_from_json(to_json(s)), s);
  EXPECT_EQ(to_string(s), to_string(Schedule{}) + " persistent");
  nlohmann::json explicit_false = to_json(Schedule{});
  explicit_false["persistent"] = false;
  EXPECT_EQ(schedule_from_json(explicit_false), Schedule{});
}

TEST(ScheduleJson, TextOfTheDefault) {
  EXPECT_EQ(to_json(Schedule{}).dump(),
            R"({"bk":64,"bm":128,"bn":128,"carried":"registers","cluster_n":1,"raster_group_m":8,)"
            R"("reduction":"cta","stages":4,"warp_roles":"cooperative"})");
  EXPECT_EQ(to_string(Schedule{}),
            "BM=128 BN=128 BK=64 stages=4 cluster_n=1 cooperative reduction=cta carried=registers "
            "raster_group_m=8");
}

TEST(ScheduleJson, KnobSettingsChangeOnlyTheirKnobs) {
  Schedule base;
  base.persistent = base.vector_loads = true;
  const Schedule changed = with_knobs(
      base,
      parse_knob_settings({"stages=3", "carried=l2_stash", "vector_loads=false", "tma_inputs=true"}, "test"),
      "test");
  Schedule expected = base;
  expected.stages = 3;
  expected.carried = ValueHome::kL2Stash;
  expected.vector_loads = false;
  expected.tma_inputs = true;
  EXPECT_EQ(to_json(changed), to_json(expected));
  EXPECT_EQ(to_json(with_knobs(base, {}, "test")), to_json(base));
  // Typed as their fields: an integer's text is not a string, a boolean's is not an integer.
  const std::vector<KnobSetting> settings = parse_knob_settings({"bn=128", "persistent=false"}, "test");
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_TRUE(settings[0].value.is_number_integer());
  EXPECT_TRUE(settings[1].value.is_boolean());
}

TEST(Schedule, EnumNames) {
  EXPECT_EQ(warp_roles_name(WarpRoles::kCooperative), "cooperative");
  EXPECT_EQ(warp_roles_name(WarpRoles::kPingPong), "ping_pong");
  EXPECT_EQ(reduction_placement_name(ReductionPlacement::kCta), "cta");
  EXPECT_EQ(reduction_placement_name(ReductionPlacement::kCluster), "cluster");
  EXPECT_EQ(value_home_name(ValueHome::kRegisters), "registers");
  EXPECT_EQ(value_home_name(ValueHome::kL2Stash), "l2_stash");
}

}  // namespace
}  // namespace comfuse::schedule
