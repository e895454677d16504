// The fused back-to-back kernel's schedule: its space, legality and JSON.
#include "schedule/b2b_schedule.h"

#include <gtest/gtest.h>

#include "te/error_of.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

B2BPlan plan_of(const std::string& workload, const te::Shape& shape) {
  return plan_b2b(te::build_workload(workload, shape));
}

TEST(B2BSchedule, SpaceHoldsEveryLegalStageCountWithAndWithoutOverlap) {
  const B2BPlan mlp = plan_of("mlp_relu", {{"M", 256}, {"K", 128}, {"N", 256}, {"O", 64}});
  const std::vector<B2BSchedule> space = b2b_schedule_space(mlp);
  ASSERT_EQ(space.size(), 10u);  // stages 2..6 x overlap
  EXPECT_EQ(space.front(), (B2BSchedule{2, false}));
  EXPECT_EQ(space.back(), (B2BSchedule{6, true}));
  for (const B2BSchedule& s : space) EXPECT_NO_THROW(check_legal(mlp, s)) << to_string(s);
  // K=256 is four K blocks: fewer stages cannot hold a chunk's W1 boxes.
  const B2BPlan wide = plan_of("mlp_relu", {{"M", 256}, {"K", 256}, {"N", 256}, {"O", 64}});
  for (const B2BSchedule& s : b2b_schedule_space(wide)) EXPECT_GE(s.stages, 4);
  EXPECT_EQ(b2b_schedule_space(wide).size(), 6u);
}

TEST(B2BSchedule, JsonRoundTripAndStrictParsing) {
  for (const B2BSchedule s : {B2BSchedule{2, false}, B2BSchedule{5, true}}) {
    const nlohmann::json json = to_json(s);
    EXPECT_TRUE(is_b2b_schedule_json(json));
    EXPECT_EQ(b2b_schedule_from_json(nlohmann::json::parse(json.dump())), s);
  }
  EXPECT_EQ(to_json(B2BSchedule{}).dump(), R"({"kernel":"b2b","overlap":false,"stages":4})");
  EXPECT_EQ(to_string(B2BSchedule{3, true}), "b2b stages=3 overlap");
  nlohmann::json j = to_json(B2BSchedule{});
  j["bm"] = 128;
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j, "record[2].schedule"); }),
            "record[2].schedule: unknown field 'bm'");
  j = to_json(B2BSchedule{});
  j["overlap"] = 1;
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }), "schedule.overlap: expected true or false");
  j = to_json(B2BSchedule{});
  j.erase("stages");
  EXPECT_EQ(te::error_of([&] { b2b_schedule_from_json(j); }), "schedule: missing field 'stages'");
  EXPECT_FALSE(is_b2b_schedule_json(nlohmann::json{{"bm", 128}}));
  EXPECT_EQ(te::error_of([] {
              b2b_schedule_from_json(nlohmann::json{{"bm", 128}});
            }),
            "schedule: not a back-to-back schedule (kernel \"b2b\")");
}

TEST(B2BSchedule, IllegalStagesNameTheKnob) {
  const B2BPlan mlp = plan_of("mlp_relu", {{"M", 64}, {"K", 256}, {"N", 64}, {"O", 64}});
  EXPECT_EQ(te::error_of([&] {
              check_legal(mlp, B2BSchedule{7, false});
            }),
            "fused back-to-back kernel: stages=7 is outside [2, 6]");
  EXPECT_EQ(
      te::error_of([&] {
        check_legal(mlp, B2BSchedule{3, true});
      }),
      "fused back-to-back kernel: stages=3 is below the 4 K blocks of K=256: GEMM1 of a chunk holds all its "
      "W1 boxes in the ring until it completes");
}

}  // namespace
}  // namespace comfuse::schedule
