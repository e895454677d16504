// cuBLAS GEMM alone, Y[M, N] = X[M, K] · W[N, K]ᵀ in bf16 with f32 accumulation: the baseline every fused
// kernel is measured against.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace comfuse::runtime {

class CublasGemm {
 public:
  CublasGemm();
  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  /// Enqueues Y = X · Wᵀ on `stream` (all row-major, bf16). Throws RuntimeError naming the cuBLAS call.
  void run(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, std::int64_t m, std::int64_t n, std::int64_t k,
           CUstream stream) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace comfuse::runtime
