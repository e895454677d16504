// The schedules a search starts from: each workload's winner on the GPU asked for, from a log's records.
#include "search/start_points.h"

#include <gtest/gtest.h>

#include "search_fixture.h"

namespace comfuse::search {
namespace {

TuningRecord with(double median, int bn, const std::string& key, RecordStatus status = RecordStatus::kOk) {
  TuningRecord r = make_record(median, status);
  r.schedule.bn = bn;
  r.workload.key = key;
  return r;
}

TEST(StartPoints, TheWinnerOfEachWorkloadInKeyOrder) {
  const std::vector<TuningRecord> records = {with(100, 128, "sha256:b"), with(80, 64, "sha256:b"),
                                             with(50, 192, "sha256:a"), with(40, 256, "sha256:a")};
  const std::vector<schedule::Schedule> starts = start_points(records, "NVIDIA H200");
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].bn, 256);  // workload a's fastest
  EXPECT_EQ(starts[1].bn, 64);   // workload b's
}

TEST(StartPoints, OnlyCorrectRecordsOfTheNamedGpu) {
  TuningRecord other_gpu = with(10, 64, "sha256:a");
  other_gpu.target.name = "NVIDIA H100 80GB HBM3";
  const std::vector<TuningRecord> records = {other_gpu, with(5, 128, "sha256:a", RecordStatus::kWrongAnswer),
                                             with(30, 192, "sha256:a"),
                                             with(1, 256, "sha256:c", RecordStatus::kCrash)};
  const std::vector<schedule::Schedule> starts = start_points(records, "NVIDIA H200");
  ASSERT_EQ(starts.size(), 1u);  // workload c has no correct record
  EXPECT_EQ(starts[0].bn, 192);
  EXPECT_EQ(start_points(records, "NVIDIA H100 80GB HBM3").at(0).bn, 64);
  EXPECT_TRUE(start_points(records, "NVIDIA A100").empty());
}

TEST(StartPoints, BackToBackRecordsAreLeftOut) {
  TuningRecord b2b = with(10, 64, "sha256:a");
  b2b.b2b = schedule::B2BSchedule{};
  EXPECT_TRUE(start_points({b2b}, "NVIDIA H200").empty());
  EXPECT_FALSE(own_winner({b2b}, "NVIDIA H200", "sha256:a"));
  EXPECT_FALSE(workload_winner({b2b}, "sha256:a"));
}

TEST(StartPoints, TheOwnWinnerIsTheNamedWorkloadsFastestCorrectRecordOnTheGpu) {
  TuningRecord other_gpu = with(10, 64, "sha256:a");
  other_gpu.target.name = "NVIDIA H100 80GB HBM3";
  const std::vector<TuningRecord> records = {other_gpu, with(5, 128, "sha256:a", RecordStatus::kWrongAnswer),
                                             with(30, 192, "sha256:a"), with(20, 256, "sha256:b")};
  const std::optional<schedule::Schedule> a = own_winner(records, "NVIDIA H200", "sha256:a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bn, 192);  // not b's faster one, the other GPU's, or the wrong answer
  EXPECT_EQ(own_winner(records, "NVIDIA H200", "sha256:b")->bn, 256);
  EXPECT_EQ(own_winner(records, "NVIDIA H100 80GB HBM3", "sha256:a")->bn, 64);
  EXPECT_FALSE(own_winner(records, "NVIDIA H200", "sha256:c"));
}

TEST(StartPoints, TheWorkloadWinnerIsItsFastestCorrectRecordOnAnyGpu) {
  TuningRecord other_gpu = with(10, 64, "sha256:a");
  other_gpu.target.name = "NVIDIA H100 80GB HBM3";
  const std::vector<TuningRecord> records = {with(30, 192, "sha256:a"), other_gpu,
                                             with(5, 128, "sha256:a", RecordStatus::kWrongAnswer),
                                             with(1, 256, "sha256:b")};
  EXPECT_EQ(workload_winner(records, "sha256:a")->bn, 64);  // the other GPU's, not the wrong answer or b's
  EXPECT_FALSE(workload_winner(records, "sha256:c"));
}

}  // namespace
}  // namespace comfuse::search
