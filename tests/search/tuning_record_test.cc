// Tuning record JSON: canonical round trips for every status.
#include <gtest/gtest.h>

#include "search_fixture.h"

namespace comfuse::search {
namespace {

TEST(TuningRecord, RoundTripsByteForByteForEveryStatus) {
  for (RecordStatus status : {RecordStatus::kOk, RecordStatus::kCompileError, RecordStatus::kLaunchError,
                              RecordStatus::kWrongAnswer, RecordStatus::kTimeout, RecordStatus::kCrash}) {
    const TuningRecord record = make_record(12.25, status);
    const std::string line = record_to_json(record).dump();
    const TuningRecord parsed = record_from_json(nlohmann::json::parse(line));
    EXPECT_EQ(record_to_json(parsed).dump(), line) << status_name(status);
    EXPECT_EQ(parsed.status, status);
    EXPECT_EQ(parsed.median_us, record.median_us);
    EXPECT_EQ(parsed.schedule, record.schedule);
    EXPECT_EQ(parsed.target, record.target);
  }
}

TEST(TuningRecord, NullMedianWithoutTimes) {
  const auto j = record_to_json(make_record(0, RecordStatus::kCrash));
  EXPECT_TRUE(j.at("median_us").is_null());
  EXPECT_EQ(parse_status("wrong_answer"), RecordStatus::kWrongAnswer);
  EXPECT_EQ(parse_status("OK"), std::nullopt);
}

}  // namespace
}  // namespace comfuse::search
