// cuBLAS GEMM alone through cublasGemmEx.
#include "runtime/cublas_gemm.h"

#include <cublas_v2.h>

#include "support/error.h"

namespace comfuse::runtime {
namespace {

void check(cublasStatus_t status, const char* api) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(api, static_cast<int>(status), "cuBLAS call failed");
}

}  // namespace

CublasGemm::CublasGemm() {
  cublasHandle_t handle = nullptr;
  check(cublasCreate(&handle), "cublasCreate");
  handle_ = handle;
}

CublasGemm::~CublasGemm() {
  if (handle_ != nullptr) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

void CublasGemm::run(CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, std::int64_t m, std::int64_t n,
                     std::int64_t k, CUstream stream) const {
  auto handle = static_cast<cublasHandle_t>(handle_);
  check(cublasSetStream(handle, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major Y[M, N] is column-major Yᵀ[N, M] = W[N, K] · Xᵀ[K, M]: W read transposed, X as is.
  check(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                     static_cast<int>(k), &alpha, reinterpret_cast<const void*>(w), CUDA_R_16BF,
                     static_cast<int>(k), reinterpret_cast<const void*>(x), CUDA_R_16BF, static_cast<int>(k),
                     &beta, reinterpret_cast<void*>(y), CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

}  // namespace comfuse::runtime
