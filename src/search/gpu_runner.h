// Measuring candidates on a GPU: the runner a tuning worker process uses, and the per-workload data it
// shares with every worker (inputs and reference rows, prepared once in the tuning process).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/reference_check.h"
#include "schedule/b2b_plan.h"
#include "schedule/fusion_plan.h"
#include "search/isolated_measurer.h"
#include "te/host_buffer.h"

namespace comfuse::search {

/// What every candidate of one workload is measured against.
struct GpuWorkload {
  schedule::FusionPlan plan;
  std::string key;                     // te::workload_key of the program
  std::vector<te::HostBuffer> inputs;  // fresh random inputs, program.inputs() order
  codegen::ReferenceRows reference;    // the CPU reference on the checked rows of those inputs
  double tolerance = 1e-2;             // relative error a correct candidate stays within
};

/// Plans `program`, draws its inputs from `seed` and evaluates the CPU reference on the rows a check
/// compares (see codegen::check_against_reference).
GpuWorkload prepare_workload(const te::Program& program, std::uint64_t seed);

/// Runs candidates on device `ordinal`: loads the cubin, binds fresh device buffers, fills the outputs with
/// NaN bytes, launches once and checks the outputs against the reference (wrong → kWrongAnswer, not
/// timed), then times the kernel with CUPTI (L2 flushed before each run). CUDA errors are kLaunchError and
/// mark the device unusable.
class GpuRunner : public CandidateRunner {
 public:
  struct State;  // the worker's context, stream and CUPTI timer
  GpuRunner(const GpuWorkload& workload, int ordinal = 0);
  ~GpuRunner() override;

  runtime::DeviceFingerprint target() override;
  Measurement run(const schedule::Schedule& schedule, const std::string& image, int repeats,
                  bool* unusable) override;
  std::optional<double> gemm_alone_us(int repeats) override;

 private:
  const GpuWorkload& workload_;
  std::unique_ptr<State> state_;
};

/// The measurer of a tuning run on a GPU: an IsolatedMeasurer whose workers run a GpuRunner over
/// `workload` (which must outlive it).
std::unique_ptr<IsolatedMeasurer> make_gpu_measurer(const GpuWorkload& workload, int ordinal = 0,
                                                    IsolationOptions options = {});

/// What every fused back-to-back candidate of one workload is measured against.
struct B2BGpuWorkload {
  schedule::B2BPlan plan;
  std::string key;
  std::vector<te::HostBuffer> inputs;
  codegen::ReferenceRows reference;  // rows of X, or whole batches of a batched program
  double tolerance = 1e-2;
};

/// Plans `program` as back to back (schedule::plan_b2b), draws its inputs and evaluates the reference on the
/// compared rows (of X, or whole batches when it is batched).
B2BGpuWorkload prepare_b2b_workload(const te::Program& program, std::uint64_t seed);

/// Runs fused back-to-back candidates (run_b2b) like GpuRunner runs fused-GEMM ones; it has no cuBLAS
/// baseline.
class B2BGpuRunner : public CandidateRunner {
 public:
  B2BGpuRunner(const B2BGpuWorkload& workload, int ordinal = 0);
  ~B2BGpuRunner() override;

  runtime::DeviceFingerprint target() override;
  Measurement run(const schedule::Schedule& schedule, const std::string& image, int repeats,
                  bool* unusable) override;
  Measurement run_b2b(const schedule::B2BSchedule& schedule, const std::string& image, int repeats,
                      bool* unusable) override;
  std::optional<double> gemm_alone_us(int) override { return std::nullopt; }

 private:
  const B2BGpuWorkload& workload_;
  std::unique_ptr<GpuRunner::State> state_;
};

std::unique_ptr<IsolatedMeasurer> make_b2b_gpu_measurer(const B2BGpuWorkload& workload, int ordinal = 0,
                                                        IsolationOptions options = {});

}  // namespace comfuse::search
