// The shipped tuning log replays: every record's schedule regenerates exactly the source it was measured
// with, the same in two fresh processes, and each workload's winner replays on the log's own target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>

#include "search/replay.h"
#include "search/tuning_log.h"
#include "support/fresh_process.h"
#include "support/sha256.h"

namespace comfuse::search {
namespace {

const std::string kShippedLog = std::string(COMFUSE_SOURCE_DIR) + "/tuning_logs/h200.jsonl";

// The source a record's schedule generates (as replay regenerates it).
std::string regenerated_source(const TuningRecord& r) {
  return regenerate(r, r.workload.program).source;
}

std::string what(const TuningRecord& r) {
  return (r.b2b ? schedule::to_string(*r.b2b) : schedule::to_string(r.schedule)) + " of " + r.workload.key;
}

// The sha256 of every record's regenerated source, in log order, hashed together.
std::string regenerated_digest(const std::vector<TuningRecord>& records) {
  std::string all;
  for (const TuningRecord& r : records) all += sha256_hex(regenerated_source(r));
  return sha256_hex(all);
}

TEST(ShippedLog, LoadsStrictlyAndCoversTheSuite) {
  const LoadResult loaded = TuningLog::load(kShippedLog, true);
  ASSERT_GT(loaded.records.size(), 300u);
  std::set<std::string> keys;
  for (const TuningRecord& r : loaded.records) keys.insert(r.workload.key);
  EXPECT_GE(keys.size(), 19u);  // 11 fused rows and 8 GEMM shapes
}

TEST(ShippedLog, EveryRecordRegeneratesItsSource) {
  const LoadResult loaded = TuningLog::load(kShippedLog, true);
  for (const TuningRecord& r : loaded.records) {
    ASSERT_EQ(sha256_hex(regenerated_source(r)), r.source_sha256) << "schedule " << what(r);
  }
}

TEST(ShippedLog, EachWorkloadReplaysOnItsTarget) {
  const LoadResult loaded = TuningLog::load(kShippedLog, true);
  std::set<std::string> done;
  for (const TuningRecord& r : loaded.records) {
    if (!done.insert(r.workload.key).second) continue;
    const ReplayResult result = replay(loaded.records, r.workload.program, r.target);
    EXPECT_EQ(result.record.status, RecordStatus::kOk);
    EXPECT_EQ(sha256_hex(result.kernel.source), result.record.source_sha256);
  }
  EXPECT_GE(done.size(), 19u);
}

TEST(ShippedLog, PrintDigest) {
  if (std::getenv("COMFUSE_PRINT_SHIPPED_DIGEST") == nullptr) GTEST_SKIP() << "run by the test below";
  std::cout << "digest=" << regenerated_digest(TuningLog::load(kShippedLog, true).records) << "\n";
}

TEST(ShippedLog, SameSourcesInTwoFreshProcesses) {
  const std::string first = testing_support::value_from_fresh_process("COMFUSE_PRINT_SHIPPED_DIGEST",
                                                                      "ShippedLog.PrintDigest", "digest=");
  const std::string second = testing_support::value_from_fresh_process("COMFUSE_PRINT_SHIPPED_DIGEST",
                                                                       "ShippedLog.PrintDigest", "digest=");
  EXPECT_EQ(first.size(), 64u) << first;
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, regenerated_digest(TuningLog::load(kShippedLog, true).records));
}

}  // namespace
}  // namespace comfuse::search
