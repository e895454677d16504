// Tuning the fused back-to-back kernel, its records in the log, their replay, and the profitability guard
// that picks the fused kernel or the two-kernel plan from measured records.
#include "search/b2b_tuner.h"

#include <gtest/gtest.h>

#include "schedule/b2b_plan.h"
#include "search/b2b_choice.h"
#include "search/replay.h"
#include "search/tuner.h"
#include "search_fixture.h"
#include "simulated_measurer.h"
#include "te/error_of.h"

namespace comfuse::search {
namespace {

te::Program small_mlp() {
  return te::build_workload("mlp_relu", {{"M", 256}, {"K", 64}, {"N", 128}, {"O", 64}});
}

// Answers B2B candidates with a time that falls with stages and is lower with overlap, 128-column chunks and
// one consumer warpgroup; fails stages=3 as a wrong answer; refuses fused-GEMM requests (this workload has
// none).
class B2BTimes : public Measurer {
 public:
  explicit B2BTimes(double base) : base_(base) {}
  runtime::DeviceFingerprint target() override { return h200(); }
  Measurement measure(const MeasureRequest& request) override {
    if (!request.b2b) return {RecordStatus::kLaunchError, "not a b2b request", {}, 0};
    ++measured;
    if (request.b2b->stages == 3) return {RecordStatus::kWrongAnswer, "simulated wrong answer", {}, 0.5};
    const schedule::B2BSchedule& s = *request.b2b;
    const double us = base_ - s.stages - (s.overlap ? 5 : 0) - (s.bn1 == 128 ? 2 : 0) - (s.bm == 64 ? 1 : 0) -
                      (s.persistent ? 3 : 0) - (s.tma_store ? 1 : 0);
    return {RecordStatus::kOk, "", std::vector<double>(static_cast<std::size_t>(request.repeats), us), 0};
  }
  std::optional<double> gemm_alone_us(int) override { return std::nullopt; }
  int measured = 0;

 private:
  double base_;
};

TuneOptions fake_options() {
  TuneOptions options;
  options.repeats = 3;
  options.final_repeats = 5;
  options.compile = [](const codegen::KernelSource& k) { return fake_compile(k); };
  return options;
}

TEST(B2BTuner, MeasuresTheWholeSpaceAndPicksTheFastestCorrectSchedule) {
  B2BTimes measurer(100);
  const TuneResult result = tune_b2b(small_mlp(), measurer, fake_options());
  ASSERT_TRUE(result.winner.b2b.has_value());
  EXPECT_EQ(*result.winner.b2b, (schedule::B2BSchedule{6, true, 64, 128, false, true, false, true}));
  EXPECT_DOUBLE_EQ(*result.winner.median_us, 100 - 6 - 5 - 2 - 1 - 3 - 1);
  // operand x persistent x bm x bn1 x stages 2..6 x overlap, and ping-pong at bm=128 (the operand's place
  // does not change this fake's times: in a tie the one in registers, first in canonical order, stays); then
  // the 100 persistent ones again with the TMA store.
  EXPECT_EQ(result.space, 300);
  EXPECT_EQ(result.measured, 300);
  EXPECT_EQ(result.failed, 60);  // stages=3, every way of running chunks, tile size, grid, operand and store
  for (const TuningRecord& r : result.records) {
    ASSERT_TRUE(r.b2b.has_value());
    EXPECT_EQ(r.workload.key, te::workload_key(small_mlp()));
    if (r.b2b->stages == 3) {
      EXPECT_EQ(r.status, RecordStatus::kWrongAnswer);
    }
  }
}

TEST(B2BTuner, RefusesProgramsTheFusedKernelDoesNotTake) {
  B2BTimes measurer(100);
  const te::Program wide = te::build_workload("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 1024}});
  EXPECT_EQ(te::error_of([&] { tune_b2b(wide, measurer, fake_options()); }),
            "fused back-to-back kernel: GEMM2 has O=1024 columns: one warpgroup's accumulator holds a "
            "multiple of 8 "
            "up to 256");
  EXPECT_EQ(measurer.measured, 0);
}

TEST(B2BTuner, RecordsRoundTripAndReplayIntoTheSameKernel) {
  B2BTimes measurer(100);
  const TuneResult result = tune_b2b(small_mlp(), measurer, fake_options());
  const TuningRecord& winner = result.winner;
  const nlohmann::json json = record_to_json(winner);
  EXPECT_EQ(json.at("schedule").at("kernel"), "b2b");
  const TuningRecord back = record_from_json(nlohmann::json::parse(json.dump()));
  ASSERT_TRUE(back.b2b.has_value());
  EXPECT_EQ(*back.b2b, *winner.b2b);
  EXPECT_EQ(record_to_json(back).dump(), json.dump());
  const ReplayResult replayed = replay(result.records, small_mlp(), h200());
  EXPECT_EQ(*replayed.record.b2b, *winner.b2b);
  EXPECT_EQ(sha256_hex(replayed.kernel.source), winner.source_sha256);
  EXPECT_NE(replayed.kernel.source.find(
                "fused back-to-back kernel, b2b bm=64 bn1=128 stages=6 overlap persistent store=tma (GEMMs"),
            std::string::npos);
}

// The two parts of small_mlp(), each with one measured record of its default schedule.
std::vector<TuningRecord> part_records(double first_us, double second_us) {
  std::vector<TuningRecord> records;
  const std::vector<te::Program> parts = schedule::kernel_programs(small_mlp());
  const double times[] = {first_us, second_us};
  for (std::size_t p = 0; p < parts.size(); ++p) {
    TuningRecord r(Workload{te::workload_key(parts[p]), parts[p]});
    r.target = h200();
    r.compiler.comfuse = kVersion;
    const schedule::FusionPlan plan = schedule::plan_fusion(parts[p]);
    r.schedule = schedule::default_schedule(plan);
    r.times_us = {times[p]};
    r.median_us = times[p];
    r.source_sha256 = sha256_hex(codegen::emit_kernel(plan, r.schedule, r.workload.key).source);
    r.timestamp = "2026-12-03T12:00:00Z";
    records.push_back(std::move(r));
  }
  return records;
}

TEST(B2BChoice, TheFusedKernelRunsOnlyWhereItBeatsTheTwoKernels) {
  B2BTimes measurer(100);
  const std::vector<TuningRecord> fused =
      tune_b2b(small_mlp(), measurer, fake_options()).records;  // best 82 us

  std::vector<TuningRecord> losing = fused;
  for (TuningRecord& r : part_records(40, 30)) losing.push_back(std::move(r));
  const B2BChoice loses = choose_b2b(losing, small_mlp(), h200());
  EXPECT_FALSE(loses.fused);
  EXPECT_DOUBLE_EQ(*loses.fused_us, 82);
  EXPECT_DOUBLE_EQ(*loses.unfused_us, 70);
  EXPECT_EQ(loses.reason,
            "two kernels: the fused kernel loses, 82.0 us fused against 70.0 us for the two kernels "
            "(40.0 us + 30.0 us)");

  std::vector<TuningRecord> winning = fused;
  for (TuningRecord& r : part_records(60, 50)) winning.push_back(std::move(r));
  const B2BChoice wins = choose_b2b(winning, small_mlp(), h200());
  EXPECT_TRUE(wins.fused);
  ASSERT_TRUE(wins.fused_kernel.has_value());
  EXPECT_EQ(wins.parts.size(), 2u);

  // Without records of the parts the fused kernel runs; without either, the refusal names both reasons.
  EXPECT_TRUE(choose_b2b(fused, small_mlp(), h200()).fused);
  const B2BChoice only_parts = choose_b2b(part_records(40, 30), small_mlp(), h200());
  EXPECT_FALSE(only_parts.fused);
  EXPECT_NE(only_parts.reason.find("fused kernel: no record for workload"), std::string::npos)
      << only_parts.reason;
  const std::string neither = te::error_of([] { choose_b2b({}, small_mlp(), h200()); });
  EXPECT_NE(neither.find("no plan for this back-to-back workload: fused kernel: no record"),
            std::string::npos)
      << neither;
}

}  // namespace
}  // namespace comfuse::search
