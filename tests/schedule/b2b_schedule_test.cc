// The fused back-to-back kernel's schedule: its space, legality and JSON.
#include "schedule/b2b_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "te/error_of.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

B2BPlan plan_of(const std::string& workload, const te::Shape& shape) {
  return plan_b2b(te::build_workload(workload, shape));
}

std::size_t direct_stores(const std::vector<B2BSchedule>& space) {
  return static_cast<std::size_t>(
      std::count_if(space.begin(), space.end(), [](const B2BSchedule& s) { return !s.tma_store; }));
}

TEST(B2BSchedule, SpaceHoldsEveryLegalTileStageCountAndOverlap) {
  const B2BPlan mlp = plan_of("mlp_relu", {{"M", 256}, {"K", 128}, {"N", 256}, {"O", 64}});
  const std::vector<B2BSchedule> space = b2b_schedule_space(mlp);
  // (operand in registers, in shared memory) x (one grid, persistent) x bm x bn1 x stages 2..6 x (one chunk
  // at a time, overlap), and ping-pong at bm=128; less the two persistent bm=128 bn1=128 overlapped schedules
  // at 5 and 6 stages whose two operand buffers do not fit; then the persistent ones again with the TMA
  // store (O=64 fits X's two 64-column boxes).
  ASSERT_EQ(space.size(), 198u + 98u);
  EXPECT_EQ(space.front(), (B2BSchedule{2, false, 64, 64}));
  EXPECT_EQ(space[197], (B2BSchedule{6, false, 128, 128, true, true, true}));
  EXPECT_EQ(space.back(), (B2BSchedule{6, false, 128, 128, true, true, true, true}));
  const auto staged =
      std::count_if(space.begin(), space.end(), [](const B2BSchedule& s) { return s.tma_store; });
  const auto persistent = std::count_if(space.begin(), space.end(),
                                        [](const B2BSchedule& s) { return s.persistent && !s.tma_store; });
  EXPECT_EQ(staged, persistent);
  for (const B2BSchedule& s : space) EXPECT_NO_THROW(check_legal(mlp, s)) << to_string(s);
  // K=256 is four K blocks: fewer stages cannot hold a chunk's W1 boxes.
  const B2BPlan wide = plan_of("mlp_relu", {{"M", 256}, {"K", 256}, {"N", 256}, {"O", 64}});
  for (const B2BSchedule& s : b2b_schedule_space(wide)) EXPECT_GE(s.stages, 4);
  // Persistent CTAs keep two X blocks (64 KB each at bm=128): six of their bm=128 bn1=128 schedules do not
  // fit, and with the operand in shared memory five more.
  EXPECT_EQ(direct_stores(b2b_schedule_space(wide)), 2 * 54u - 5);
  // O=256: one warpgroup per CTA cannot hold the accumulator at two CTAs an SM, and bn1=128 needs more shared
  // memory than a CTA has (64 KB of X, 16 KB a stage from 4 stages on, two 64 KB W2 buffers).
  const B2BPlan tall = plan_of("mlp_relu", {{"M", 256}, {"K", 256}, {"N", 256}, {"O", 256}});
  const std::vector<B2BSchedule> tall_space = b2b_schedule_space(tall);
  for (const B2BSchedule& s : tall_space) {
    EXPECT_EQ(s.bm, 128) << to_string(s);
    EXPECT_LE(b2b_shared_bytes(tall, s), 227 * 1024) << to_string(s);
  }
  // bn1=64, stages 4..6, the three ways of running chunks; persistent (two X blocks) only at stages 4, and
  // not with the operand in shared memory.
  EXPECT_EQ(direct_stores(tall_space), 2 * 12u - 3);
}

TEST(B2BSchedule, JsonRoundTripAndStrictParsing) {
  for (const B2BSchedule s : {B2BSchedule{2, false}, B2BSchedule{5, true}}) {
    const nlohmann::json json = to_json(s);
    EXPECT_TRUE(is_b2b_schedule_json(json));
    EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(json.dump())), s);
  }
  EXPECT_EQ(to_json(B2BSchedule{}).dump(),
            R"({"bm":128,"bn1":64,"kernel":"b2b","operand":"registers","overlap":false,"persistent":false,)"
            R"("pingpong":false,"stages":4})");
  const B2BSchedule shared{3, true, 128, 128, false, false, true};
  EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(to_json(shared).dump())), shared);
  EXPECT_EQ(to_string(shared), "b2b bm=128 bn1=128 stages=3 overlap operand=shared");
  const B2BSchedule persistent{4, true, 64, 128, false, true};
  EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(to_json(persistent).dump())), persistent);
  EXPECT_EQ(to_string(persistent), "b2b bm=64 bn1=128 stages=4 overlap persistent");
  EXPECT_EQ(to_string(B2BSchedule{2, false, 128, 128, true}), "b2b bm=128 bn1=128 stages=2 pingpong");
  const B2BSchedule pingpong{5, false, 128, 64, true};
  EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(to_json(pingpong).dump())), pingpong);
  EXPECT_EQ(to_string(B2BSchedule{3, true, 64, 128}), "b2b bm=64 bn1=128 stages=3 overlap");
  // Records older than the tile knobs were measured at bm=128, bn1=64, one CTA a row block.
  EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(R"({"kernel":"b2b","overlap":true,"stages":3})")),
            (B2BSchedule{3, true, 128, 64}));
  nlohmann::json j = to_json(B2BSchedule{});
  j["bk"] = 128;
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j, "record[2].schedule"); }),
            "record[2].schedule: unknown field 'bk'");
  j = to_json(B2BSchedule{});
  j["bn1"] = "wide";
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }), "schedule.bn1: expected an integer");
  j = to_json(B2BSchedule{});
  j["overlap"] = 1;
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }), "schedule.overlap: expected true or false");
  j = to_json(B2BSchedule{});
  j["persistent"] = "yes";
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }), "schedule.persistent: expected true or false");
  j = to_json(B2BSchedule{});
  j["operand"] = "global";
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }),
            "schedule.operand: expected \"registers\" or \"shared\", not \"global\"");
  // The store is written only when it is the TMA store: direct-store records read as before the knob.
  EXPECT_FALSE(to_json(B2BSchedule{}).contains("store"));
  const B2BSchedule staged{4, true, 64, 128, false, true, false, true};
  EXPECT_EQ(to_json(staged).at("store"), "tma");
  EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(to_json(staged).dump())), staged);
  EXPECT_EQ(to_string(staged), "b2b bm=64 bn1=128 stages=4 overlap persistent store=tma");
  j = to_json(B2BSchedule{});
  j["store"] = "direct";
  EXPECT_EQ(b2b_schedule_from_json(j), B2BSchedule{});
  j["store"] = "async";
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }),
            "schedule.store: expected \"direct\" or \"tma\", not \"async\"");
  j = to_json(B2BSchedule{});
  j.erase("stages");
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }), "schedule: missing field 'stages'");
  EXPECT_FALSE(is_b2b_schedule_json(nlohmann::json{{"bm", 128}}));
  EXPECT_EQ(te::error_of([] {
              b2b_schedule_from_json(nlohmann::json{{"bm", 128}});
            }),
            "schedule: not a back-to-back schedule (kernel \"b2b\")");
}

TEST(B2BSchedule, TheTmaStoreNeedsOneSixteenBitOutputThatFitsXsBuffer) {
  B2BSchedule staged{4, false, 128, 64, false, true, false, true};
  EXPECT_NO_THROW(check_legal(plan_of("mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}), staged));
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(plan_of("mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}),
                    B2BSchedule{4, false, 128, 64, false, false, false, true});
      }),
      "fused back-to-back kernel: store=tma without persistent: the TMA store is generated, verified on the "
      "GPU and searched with the persistent grid only");
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(plan_of("mlp_relu", {{"M", 300}, {"K", 64}, {"N", 200}, {"O", 128}}), staged);
      }),
      "fused back-to-back kernel: store=tma with O=128 and K=64: the output tile is staged in X's buffer "
      "(O a multiple of 8, at most K rounded up to 64)");
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(plan_of("mlp_relu", {{"M", 300}, {"K", 64}, {"N", 200}, {"O", 36}}), staged);
      }),
      "fused back-to-back kernel: store=tma with O=36 and K=64: the output tile is staged in X's buffer "
      "(O a multiple of 8, at most K rounded up to 64)");
  // Batches of rows: a box past a batch's last row would land in the next batch.
  EXPECT_NO_THROW(
      check_legal(plan_of("attention", {{"BH", 2}, {"L", 192}, {"D", 64}, {"CAUSAL", 1}}), staged));
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(plan_of("attention", {{"BH", 2}, {"L", 100}, {"D", 64}, {"CAUSAL", 0}}), staged);
      }),
      "fused back-to-back kernel: store=tma with batches of M=100 rows: a 64-row box past a batch's last "
      "row would write into the next batch");
  for (const B2BSchedule& s :
       b2b_schedule_space(plan_of("target_attention", {{"BH", 4}, {"LQ", 32}, {"LK", 256}, {"D", 64}})))
    EXPECT_FALSE(s.tma_store) << to_string(s);
}

TEST(B2BSchedule, IllegalKnobsAreNamed) {
  const B2BPlan mlp = plan_of("mlp_relu", {{"M", 64}, {"K", 256}, {"N", 64}, {"O", 64}});
  EXPECT_EQ(te::error_of([&] {
              check_legal(mlp, B2BSchedule{7, false});
            }),
            "fused back-to-back kernel: stages=7 is outside [2, 6]");
  EXPECT_EQ(te::error_of([&] {
              check_legal(mlp, B2BSchedule{4, false, 96, 64});
            }),
            "fused back-to-back kernel: bm=96 is not 64 or 128");
  const B2BPlan tall = plan_of("mlp_relu", {{"M", 64}, {"K", 256}, {"N", 64}, {"O", 256}});
  EXPECT_EQ(te::error_of([&] {
              check_legal(tall, B2BSchedule{4, false, 64, 64});
            }),
            "fused back-to-back kernel: bm=64 with O=256: two CTAs share an SM, whose 128 registers a thread "
            "cannot hold GEMM2's accumulator above O=128");
  const B2BPlan attention = plan_of("attention", {{"BH", 2}, {"L", 256}, {"D", 128}, {"CAUSAL", 0}});
  EXPECT_NO_THROW(check_legal(attention, B2BSchedule{3, true, 128, 64}));
  EXPECT_NO_THROW(check_legal(attention, B2BSchedule{3, false, 128, 128}));
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(attention, B2BSchedule{3, true, 128, 128});
      }),
      "fused back-to-back kernel: overlap with bn1=128, the operand in registers and the online softmax "
      "at O=128: two 128-column chunks in flight, the statistics and GEMM2's accumulator spill registers");
  for (const B2BSchedule& s : b2b_schedule_space(attention))
    EXPECT_FALSE(s.overlap && s.bn1 == 128 && !s.operand_in_shared) << to_string(s);
  // With the operand in shared memory its registers are free: measured without spills.
  EXPECT_NO_THROW(check_legal(attention, B2BSchedule{3, true, 128, 128, false, false, true}));
  const std::string pingpong_error =
      "fused back-to-back kernel: pingpong needs two consumer warpgroups (bm=128) taking turns, each one "
      "chunk "
      "at a time (no overlap)";
  EXPECT_EQ(te::error_of([&] {
              check_legal(attention, B2BSchedule{3, false, 64, 64, true});
            }),
            pingpong_error);
  EXPECT_EQ(te::error_of([&] {
              check_legal(attention, B2BSchedule{3, true, 128, 64, true});
            }),
            pingpong_error);
  EXPECT_NO_THROW(check_legal(attention, B2BSchedule{3, false, 128, 128, true}));
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(tall, B2BSchedule{6, false, 128, 128});
      }),
      "fused back-to-back kernel: b2b bm=128 bn1=128 stages=6 needs 296072 bytes of shared memory, above "
      "the 232448 a CTA has");
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(mlp, B2BSchedule{3, true});
      }),
      "fused back-to-back kernel: stages=3 is below the 4 K blocks of K=256: GEMM1 of a chunk holds all its "
      "W1 boxes in the ring until it completes");
}

}  // namespace
}  // namespace comfuse::schedule
