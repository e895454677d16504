// The analytic cost model against the H200's measurements in the shipped log (every ok record of a workload
// that reduces rows): before any calibration it must order each workload's measured schedules better than
// chance, and err alike whether a schedule combines its rows in the kernel or in a finish kernel, so that a
// tuning's first batch does not spend itself on one placement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>

#include "rank_correlation.h"
#include "search/cost_model.h"
#include "search/search_space.h"
#include "search/tuning_log.h"

namespace comfuse::search {
namespace {

const std::string kShippedLog = std::string(COMFUSE_SOURCE_DIR) + "/tuning_logs/h200.jsonl";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A form's fastest measured schedule: its median and the raw model's estimate (0 and 0: none measured).
struct Fastest {
  double measured = 0, estimated = 0;
  void offer(double measured_us, double estimated_us) {
    if (measured == 0 || measured_us < measured) *this = {measured_us, estimated_us};
  }
};

// One workload's measured schedules (the shipped log's ok fused-GEMM records) with the raw model's estimate
// of each, and its fastest: overall, with two cooperative consumer warpgroups, and ping-pong.
struct Row {
  schedule::FusionPlan plan;
  std::vector<double> estimated, measured;
  std::vector<double> deferred_ratios, in_kernel_ratios;  // measured / estimated
  schedule::Schedule fastest;
  double fastest_us = 0;
  Fastest cooperative, ping_pong;
  std::string label() const {
    std::ostringstream out;
    out << "M" << plan.anchor.m << " K" << plan.anchor.k << " N" << plan.anchor.n << " ("
        << plan.program.tensors().size() << " tensors)";
    return out.str();
  }
};

// Every workload of the shipped log, in the order of its first record.
std::vector<Row> measured_rows() {
  const LoadResult loaded = TuningLog::load(kShippedLog, true);
  std::map<std::string, std::size_t> by_key;
  std::vector<Row> rows;
  for (const TuningRecord& r : loaded.records) {
    if (r.b2b || r.status != RecordStatus::kOk) continue;
    auto [it, fresh] = by_key.try_emplace(r.workload.key, rows.size());
    if (fresh) rows.push_back({schedule::plan_fusion(r.workload.program), {}, {}, {}, {}, {}, 0, {}, {}});
    Row& row = rows[it->second];
    const double estimated = estimate(row.plan, r.schedule).total_us;
    row.estimated.push_back(estimated);
    row.measured.push_back(*r.median_us);
    (r.schedule.deferred() ? row.deferred_ratios : row.in_kernel_ratios).push_back(*r.median_us / estimated);
    if (r.schedule.warp_roles == schedule::WarpRoles::kPingPong)
      row.ping_pong.offer(*r.median_us, estimated);
    else if (r.schedule.consumer_warpgroups() == 2)
      row.cooperative.offer(*r.median_us, estimated);
    if (row.measured.size() == 1 || *r.median_us < row.fastest_us) {
      row.fastest = r.schedule;
      row.fastest_us = *r.median_us;
    }
  }
  return rows;
}

std::vector<Row> reducing_rows() {
  std::vector<Row> rows = measured_rows();
  std::erase_if(rows, [](const Row& row) { return !row.plan.has_reductions(); });
  return rows;
}

TEST(ModelAccuracy, OrdersEachReducingWorkloadsMeasurementsBetterThanChance) {
  const std::vector<Row> rows = reducing_rows();
  ASSERT_GE(rows.size(), 10u);  // the suite's post-norm and softmax rows
  for (const Row& row : rows) {
    ASSERT_GE(row.measured.size(), 50u) << row.label();
    const double rho = spearman(row.estimated, row.measured);
    std::cout << row.label() << ": rank correlation " << rho << " over " << row.measured.size() << "\n";
    EXPECT_GE(rho, 0.4) << row.label();
  }
}

TEST(ModelAccuracy, ErrsAlikeForReductionsInTheKernelAndDeferred) {
  for (const Row& row : reducing_rows()) {
    if (row.deferred_ratios.size() < 10 || row.in_kernel_ratios.size() < 10) continue;
    const double deferred = median(row.deferred_ratios), in_kernel = median(row.in_kernel_ratios);
    std::cout << row.label() << ": measured / estimated, median, deferred " << deferred << ", in the kernel "
              << in_kernel << "\n";
    // 1.5: softmax N = 32000's in-kernel records (f32 stashes over clusters of two, 2-3x slower than its
    // deferred ones) run 1.48x the model's estimate; its deferred ones 1.00x since the pipeline's depth
    // counts the work ahead (benchmarks/NOTES.md, "The cost model's pipeline depth and staged inputs").
    EXPECT_LT(std::max(deferred, in_kernel) / std::min(deferred, in_kernel), 1.5) << row.label();
  }
}

// The fastest cooperative record with two consumer warpgroups against the fastest ping-pong one, per
// workload of the shipped log that has both: the raw model must order them as measured on four in five. A
// ping-pong tile issues its wgmma one warpgroup at a time; priced as two, the model ordered 15 of 25 (22
// now).
TEST(ModelAccuracy, OrdersEachWorkloadsFastestCooperativeAndPingPongRecordsAsMeasured) {
  int compared = 0, agreed = 0;
  for (const Row& row : measured_rows()) {
    const Fastest &cooperative = row.cooperative, &ping_pong = row.ping_pong;
    if (cooperative.measured == 0 || ping_pong.measured == 0) continue;
    ++compared;
    agreed += (cooperative.measured < ping_pong.measured) == (cooperative.estimated < ping_pong.estimated);
  }
  ASSERT_GE(compared, 10);
  std::cout << "ordered as measured on " << agreed << " of " << compared << " workloads\n";
  EXPECT_GE(agreed, 0.8 * compared);
}

// A report, not a check (about 2 min on two cores): where the raw model ranks each workload's fastest record
// among all its legal schedules, for every fused workload with 20 or more ok records, with the rank
// correlation over its records; then the mean correlation and the geometric mean of (schedules ahead + 1),
// the figures benchmarks/NOTES.md compares models by. COMFUSE_PRINT_MODEL_RANKS=1 runs it.
TEST(ModelAccuracy, PrintWhereTheModelRanksTheFastestRecords) {
  if (std::getenv("COMFUSE_PRINT_MODEL_RANKS") == nullptr)
    GTEST_SKIP() << "a report: COMFUSE_PRINT_MODEL_RANKS=1";
  double rho_sum = 0, log_ahead_sum = 0;
  int counted = 0;
  for (const Row& row : measured_rows()) {
    if (row.measured.size() < 20) continue;
    const schedule::FusionPlan& plan = row.plan;
    const double mine = estimate(plan, row.fastest).total_us;
    const std::vector<schedule::Schedule> space = schedule_space(plan);
    const auto ahead = std::count_if(space.begin(), space.end(), [&](const schedule::Schedule& s) {
      return estimate(plan, s).total_us < mine;
    });
    const double rho = spearman(row.estimated, row.measured);
    rho_sum += rho;
    log_ahead_sum += std::log(static_cast<double>(ahead) + 1);
    ++counted;
    std::cout << row.label() << (plan.has_reductions() ? "" : ", no reduction") << ", " << row.fastest_us
              << " us: rank " << ahead << " of " << space.size() << ", rank correlation " << rho << " over "
              << row.measured.size() << "\n";
  }
  ASSERT_GT(counted, 0);
  std::cout << counted << " workloads: mean rank correlation " << rho_sum / counted
            << ", geometric mean of (ahead + 1) " << std::exp(log_ahead_sum / counted) << "\n";
}

}  // namespace
}  // namespace comfuse::search
