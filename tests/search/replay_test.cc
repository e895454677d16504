// Replay: the fastest ok record, target and compiler refusals naming the field, identical source across
// processes.
#include <gtest/gtest.h>

#include <unistd.h>
#include "support/fresh_process.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "search/replay.h"
#include "search_fixture.h"
#include "support/error.h"

namespace comfuse::search {
namespace {

std::string error_of(const std::vector<TuningRecord>& records, const runtime::DeviceFingerprint& target) {
  try {
    replay(records, small_post_layernorm(), target);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Replay, PicksTheFastestOkRecord) {
  TuningRecord slow = make_record(20);
  TuningRecord fast = make_record(5);
  fast.schedule.raster_group_m = 4;
  const schedule::FusionPlan plan = schedule::plan_fusion(small_post_layernorm());
  fast.source_sha256 = sha256_hex(codegen::emit_kernel(plan, fast.schedule, fast.workload.key).source);
  TuningRecord crashed = make_record(1, RecordStatus::kCrash);
  const ReplayResult result = replay({slow, crashed, fast}, small_post_layernorm(), h200());
  EXPECT_EQ(result.record.median_us, 5.0);
  EXPECT_EQ(result.kernel.schedule.raster_group_m, 4);
  EXPECT_EQ(sha256_hex(result.kernel.source), fast.source_sha256);
}

TEST(Replay, NoRecordOrNoOkRecord) {
  const std::string key = te::workload_key(small_post_layernorm());
  EXPECT_EQ(error_of({}, h200()), "no record for workload " + key + " in the tuning log");
  EXPECT_EQ(error_of({make_record(1, RecordStatus::kTimeout)}, h200()),
            "no ok record for workload " + key + " in the tuning log (1 records, none ok)");
}

TEST(Replay, RefusesEachTargetFieldUnlessAllowed) {
  struct Case {
    std::string message;
    std::function<void(TuningRecord&)> change;
  };
  const std::vector<Case> cases = {
      {"target.name differs: log has 'NVIDIA H100', this machine is 'NVIDIA H200'",
       [](TuningRecord& r) { r.target.name = "NVIDIA H100"; }},
      {"target.arch differs: log has 'sm_80', this machine is 'sm_90a'",
       [](TuningRecord& r) { r.target.arch = "sm_80"; }},
      {"target.sms differs: log has 114, this machine is 132", [](TuningRecord& r) { r.target.sms = 114; }},
      {"target.driver differs: log has '570.1', this machine is '580.159.04'",
       [](TuningRecord& r) { r.target.driver = "570.1"; }},
      {"target.cuda differs: log has '12.8', this machine is '13.0'",
       [](TuningRecord& r) { r.target.cuda = "12.8"; }},
      {"target.nvrtc differs: log has '12.8.61', this machine is '13.0.88'",
       [](TuningRecord& r) { r.target.nvrtc = "12.8.61"; }},
      {"compiler.comfuse differs: log has 'old', this comfuse is '" + std::string(kVersion) + "'",
       [](TuningRecord& r) { r.compiler.comfuse = "old"; }},
  };
  for (const Case& c : cases) {
    TuningRecord record = make_record(3);
    c.change(record);
    EXPECT_EQ(error_of({record}, h200()), c.message);
    EXPECT_EQ(
        replay({record}, small_post_layernorm(), h200(), {.allow_target_mismatch = true}).record.median_us,
        3.0);
  }
}

TEST(Replay, RefusesAChangedSource) {
  TuningRecord record = make_record(3);
  const std::string now = record.source_sha256;
  record.source_sha256 = std::string(64, '0');
  EXPECT_EQ(error_of({record}, h200()),
            "the generated source differs from the log's: comfuse changed? (log " + record.source_sha256 +
                ", now " + now + ")");
}

constexpr const char* kPrintVariable = "COMFUSE_REPLAY_PRINT_SHA";

TEST(Replay, PrintsTheSourceHash) {
  const ReplayResult result = replay({make_record(3)}, small_post_layernorm(), h200());
  if (const char* print = std::getenv(kPrintVariable); print != nullptr && std::string(print) == "1") {
    std::printf("source sha256: %s\n", sha256_hex(result.kernel.source).c_str());
    std::fflush(stdout);
  }
  EXPECT_EQ(sha256_hex(result.kernel.source), result.record.source_sha256);
}

std::string sha_from_another_process() {
  return testing_support::value_from_fresh_process(kPrintVariable, "Replay.PrintsTheSourceHash",
                                                   "source sha256: ");
}

TEST(Replay, SameSourceInTwoFreshProcesses) {
  const std::string expected = make_record(3).source_sha256;
  EXPECT_EQ(sha_from_another_process(), expected);
  EXPECT_EQ(sha_from_another_process(), expected);
}

}  // namespace
}  // namespace comfuse::search
