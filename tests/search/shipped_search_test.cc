// The H200's search of the softmax M4096 K1024 N8192 from the log's winners (2026-12-07, 23:16 UTC;
// benchmarks/NOTES.md, "Changes 75, 77 and 78 on the H200"), replayed on the CPU. The shipped log as it was
// before that search gives the starts and the resumed winner; the measurer answers with the H200's own time
// for each schedule that call measured (the search's records and the chunks' A/B, correct or not), the
// model's for others. Replayed so, the search measures what the H200's did, record for record, as long as
// the tuner chooses as it did then.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "search/cost_model.h"
#include "search/start_points.h"
#include "search/tuner.h"
#include "search/tuning_log.h"
#include "search_fixture.h"
#include "simulated_measurer.h"
#include "te/workloads.h"

namespace comfuse::search {
namespace {

const std::string kShippedLog = std::string(COMFUSE_SOURCE_DIR) + "/tuning_logs/h200.jsonl";
// That call's records lie between these (the A/B's first, the search's last); every record before it was in
// the log the search started from. Later searches of the row are left out of the replay.
const std::string kCallStart = "2026-12-07T23:16", kCallEnd = "2026-12-07T23:22";

class ReplayMeasurer : public Measurer {
 public:
  ReplayMeasurer(schedule::FusionPlan plan, std::map<schedule::Schedule, double> measured,
                 std::map<schedule::Schedule, RecordStatus> failed)
      : plan_(std::move(plan)), measured_(std::move(measured)), failed_(std::move(failed)) {}

  runtime::DeviceFingerprint target() override { return h200(); }

  Measurement measure(const MeasureRequest& request) override {
    Measurement m;
    if (const auto failed = failed_.find(request.schedule); failed != failed_.end()) {
      m.status = failed->second;
      m.error = "failed on the H200";
      return m;
    }
    const auto it = measured_.find(request.schedule);
    const double us = it != measured_.end() ? it->second : estimate(plan_, request.schedule).total_us;
    m.times_us.assign(static_cast<std::size_t>(request.repeats), us);
    return m;
  }

  std::optional<double> gemm_alone_us(int) override { return 92.3; }

 private:
  schedule::FusionPlan plan_;
  std::map<schedule::Schedule, double> measured_;
  std::map<schedule::Schedule, RecordStatus> failed_;
};

TEST(ShippedSearch, TheSoftmaxResumedFromItsWinnerMeasuresItsChunkedFourStageNeighbour) {
  // On the H200 the fourth candidate, a bf16 stash of the logits, failed the reference check, and the wrong
  // answer ruled out every knob of it that rounds, the approximate exp and packed roundings among them,
  // which the resumed winner had passed with. The winner's neighbours all keep those knobs, so none was
  // measured. Now only the knobs no correct record of the run had on are ruled out (Change 81).
  const te::Program program = te::build_workload("gemm_softmax", {{"M", 4096}, {"K", 1024}, {"N", 8192}});
  const schedule::FusionPlan plan = schedule::plan_fusion(program);
  const std::string key = te::workload_key(program);
  const LoadResult loaded = TuningLog::load(kShippedLog, true);
  std::vector<TuningRecord> before;
  std::map<schedule::Schedule, double> measured;  // this workload's ok records of the call, fastest kept
  std::map<schedule::Schedule, RecordStatus> failed;
  for (const TuningRecord& r : loaded.records) {
    if (r.timestamp < kCallStart) {
      before.push_back(r);
    } else if (r.timestamp >= kCallEnd) {
      continue;
    } else if (!r.b2b && r.workload.key == key && r.status != RecordStatus::kOk) {
      failed.emplace(r.schedule, r.status);
    } else if (!r.b2b && r.workload.key == key && r.median_us) {
      auto [it, added] = measured.emplace(r.schedule, *r.median_us);
      if (!added) it->second = std::min(it->second, *r.median_us);
    }
  }
  ASSERT_GT(measured.size(), 20u) << "the call's records of the softmax are not in " << kShippedLog;
  const std::optional<schedule::Schedule> winner = own_winner(before, "NVIDIA H200", key);
  ASSERT_TRUE(winner.has_value());
  ASSERT_FALSE(winner->store_chunks);
  schedule::Schedule chunked = *winner;  // Change 77's pair: the TMA store in chunks and the stage it frees
  chunked.store_chunks = true;
  chunked.stages += 1;
  ASSERT_TRUE(measured.count(chunked)) << "the A/B measured " << schedule::to_string(chunked);

  ReplayMeasurer measurer(plan, measured, failed);
  TuneOptions options;
  options.trials = 24;
  options.jobs = 16;
  options.repeats = 3;
  options.final_repeats = 3;
  options.compile = [](const codegen::KernelSource& k) { return fake_compile(k); };
  options.starts = start_points(before, "NVIDIA H200");
  options.resume = winner;
  const TuneResult result = tune(program, measurer, options);
  bool met = false;
  for (const TuningRecord& r : result.records) met = met || r.schedule == chunked;
  EXPECT_TRUE(met) << "never measured " << schedule::to_string(chunked);
}

}  // namespace
}  // namespace comfuse::search
