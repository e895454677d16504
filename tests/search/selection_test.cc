// The winner rule shared by the tuner and replay.
#include "search/selection.h"

#include <gtest/gtest.h>

#include "search_fixture.h"

namespace comfuse::search {
namespace {

TuningRecord with(double median, int bn, int stages = 4) {
  TuningRecord r = make_record(median);
  r.schedule.bn = bn;
  r.schedule.stages = stages;
  return r;
}

TEST(Selection, FastestWinsOutsideTheTieBand) {
  const TuningRecord slow = with(100, 128), fast = with(90, 256);
  EXPECT_EQ(select_best({&slow, &fast}), &fast);
  EXPECT_EQ(select_best({&fast, &slow}), &fast);
}

TEST(Selection, IgnoresFailuresAndReturnsNullWithoutOk) {
  const TuningRecord crashed = make_record(1, RecordStatus::kCrash);
  EXPECT_EQ(select_best({&crashed}), nullptr);
  const TuningRecord ok = with(50, 128);
  EXPECT_EQ(select_best({&crashed, &ok}), &ok);
}

TEST(Selection, TheLatestRecordOfAScheduleCounts) {
  const TuningRecord first = with(80, 128), again = with(120, 128), other = with(100, 256);
  EXPECT_EQ(select_best({&first, &other}), &first);
  EXPECT_EQ(select_best({&first, &other, &again}), &other);
}

TEST(Selection, TiesGoToFewerResourcesThenCanonicalOrder) {
  // Within 1%: the schedule with less shared memory wins even when a hair slower.
  const TuningRecord big = with(100.0, 256, 4), small = with(100.9, 64, 4);
  ASSERT_LT(small.schedule.shared_memory_bytes(), big.schedule.shared_memory_bytes());
  EXPECT_EQ(select_best({&big, &small}), &small);
  // Just outside the band, speed decides.
  const TuningRecord small_slower = with(101.1, 64, 4);
  EXPECT_EQ(select_best({&big, &small_slower}), &big);
  // Equal resources and times: canonical (JSON text) order, whatever the input order.
  TuningRecord x = with(100, 128), y = with(100, 128);
  y.schedule.raster_group_m = 4;
  ASSERT_LT(schedule::to_json(y.schedule).dump(), schedule::to_json(x.schedule).dump());
  EXPECT_EQ(select_best({&x, &y}), &y);
  EXPECT_EQ(select_best({&y, &x}), &y);
}

TEST(Selection, ContendersAreTheOkRecordsWithinTwiceTheTieBandFastestFirst) {
  const std::vector<TuningRecord> records = {
      with(101.5, 64), with(100, 128),   make_record(99, RecordStatus::kCrash),
      with(103, 192),  with(100.5, 256), with(101.9, 224),
      with(101, 160)};
  const std::vector<const TuningRecord*> picked = contenders(records);
  ASSERT_EQ(picked.size(), 4u);  // 103 is out of the band (2%), the crash does not count, four at most
  EXPECT_EQ(picked[0]->schedule.bn, 128);
  EXPECT_EQ(picked[1]->schedule.bn, 256);
  EXPECT_EQ(picked[2]->schedule.bn, 160);
  EXPECT_EQ(picked[3]->schedule.bn, 64);
  // One ok record has nothing to be tied with.
  EXPECT_TRUE(contenders({with(100, 128), make_record(90, RecordStatus::kCrash)}).empty());
}

}  // namespace
}  // namespace comfuse::search
