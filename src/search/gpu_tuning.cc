// One kernel's tuning on the GPU.
#include "search/gpu_tuning.h"

#include "search/b2b_tuner.h"

namespace comfuse::search {

GpuTuning::GpuTuning(const TuningKernel& kernel, std::uint64_t seed, IsolationOptions isolation)
    : program_(kernel.program) {
  if (kernel.role == TuningKernel::Role::kFusedB2B) {
    b2b_.emplace(prepare_b2b_workload(kernel.program, seed));
    measurer_ = make_b2b_gpu_measurer(*b2b_, 0, isolation);
  } else {
    gemm_.emplace(prepare_workload(kernel.program, seed));
    measurer_ = make_gpu_measurer(*gemm_, 0, isolation);
  }
}

TuneResult GpuTuning::tune(const TuneOptions& options) {
  return b2b_ ? tune_b2b(program_, *measurer_, options) : search::tune(program_, *measurer_, options);
}

}  // namespace comfuse::search
