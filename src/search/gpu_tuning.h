// Tuning one kernel on the GPU: its workload (a fused-GEMM program, or a back-to-back program as the fused
// B2B kernel), the isolated measurer over it, and the tuner that fits it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "search/gpu_runner.h"
#include "search/tuner.h"
#include "search/tuning_kernels.h"

namespace comfuse::search {

class GpuTuning {
 public:
  /// Prepares the workload of `kernel` (the fused back-to-back kernel for its role kFusedB2B, else a
  /// fused-GEMM kernel) and forks the measurer's supervisor: call before anything in this process touches
  /// CUDA.
  GpuTuning(const TuningKernel& kernel, std::uint64_t seed, IsolationOptions isolation = {});
  GpuTuning(const GpuTuning&) = delete;  // the measurer's workers refer to the workload
  GpuTuning& operator=(const GpuTuning&) = delete;

  IsolatedMeasurer& measurer() { return *measurer_; }
  /// The fused-GEMM workload; nullptr for the fused back-to-back kernel.
  const GpuWorkload* gemm_workload() const { return gemm_ ? &*gemm_ : nullptr; }
  /// search::tune, or search::tune_b2b for the fused back-to-back kernel.
  TuneResult tune(const TuneOptions& options);

 private:
  te::Program program_;
  std::optional<GpuWorkload> gemm_;
  std::optional<B2BGpuWorkload> b2b_;
  std::unique_ptr<IsolatedMeasurer> measurer_;
};

}  // namespace comfuse::search
