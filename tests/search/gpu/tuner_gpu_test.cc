// The tuner on the GPU: candidates checked against the CPU reference and timed in worker processes, with
// faulty candidates (illegal address, trap, hang) contained. The test process never initialises CUDA
// itself: the measuring workers are forked from it and could not use a driver it had initialised.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "search/gpu_runner.h"
#include "search/tuner.h"
#include "support/error.h"
#include "te/workloads.h"

namespace comfuse::search {
namespace {

bool gpu_required() {
  const char* value = std::getenv("COMFUSE_REQUIRE_GPU");
  return value != nullptr && std::string(value) == "1";
}

// Skips (or fails under COMFUSE_REQUIRE_GPU=1) when the worker finds no device.
#define REQUIRE_WORKER_DEVICE(measurer)                                         \
  try {                                                                         \
    (measurer).target();                                                        \
  } catch (const RuntimeError& error) {                                         \
    if (gpu_required()) FAIL() << "COMFUSE_REQUIRE_GPU=1 but " << error.what(); \
    GTEST_SKIP() << error.what();                                               \
  }

te::Shape tail_shape() {
  return {{"M", 1000}, {"K", 200}, {"N", 512}};
}

TEST(TunerGpu, TunesWithFaultyCandidatesContained) {
  const te::Program program = te::build_workload("post_layernorm", tail_shape());
  const GpuWorkload workload = prepare_workload(program, 20261202);
  IsolationOptions isolation;
  isolation.candidate_timeout_s = 10;
  const std::unique_ptr<IsolatedMeasurer> measurer = make_gpu_measurer(workload, 0, isolation);
  REQUIRE_WORKER_DEVICE(*measurer);

  TuneOptions options;
  options.trials = 12;
  options.repeats = 10;
  options.final_repeats = 20;
  options.faults = {{2, Fault::kOutOfBoundsWrite}, {5, Fault::kTrap}, {8, Fault::kHang}};
  const TuneResult result = tune(program, *measurer, options);

  std::map<RecordStatus, int> statuses;
  for (const TuningRecord& r : result.records) ++statuses[r.status];
  EXPECT_EQ(statuses[RecordStatus::kLaunchError], 2) << "the illegal address and the trap";
  EXPECT_EQ(statuses[RecordStatus::kTimeout], 1) << "the hang";
  EXPECT_EQ(statuses[RecordStatus::kCompileError], 0);
  EXPECT_EQ(statuses[RecordStatus::kWrongAnswer], 0);
  EXPECT_GE(statuses[RecordStatus::kOk], 9);
  EXPECT_EQ(result.winner.status, RecordStatus::kOk);
  EXPECT_GT(*result.winner.median_us, 0);
  EXPECT_EQ(result.winner.target.arch, "sm_90a");
  EXPECT_GE(measurer->workers_started(), 4);  // the first and one after each fault
  const std::optional<double> gemm = measurer->gemm_alone_us(20);
  ASSERT_TRUE(gemm.has_value());
  EXPECT_GT(*gemm, 0);
}

}  // namespace
}  // namespace comfuse::search
