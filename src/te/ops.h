// The op library: matmul, broadcasts, activations, norms and softmax, written only with DSL primitives.
//
// Conventions shared by every op:
// - `name` is the name of the tensor the op returns; the intermediates it creates are named from it
//   (layer_norm "ln" creates ln_mean, ln_var, ln). Names must therefore be unique within a program.
// - Arithmetic is in f32: an op reads f16/bf16 inputs through a cast to f32 (no cast when already f32) and
//   returns an f32 tensor. Only cast_to returns another dtype; workloads end with cast_to(..., bf16).
// - Inputs are validated: undefined tensors, ranks, extents and dtypes (float dtypes only, except for
//   cast_to). Errors are CompileErrors that start with "<op> '<name>': " and name the offending tensor and
//   values, e.g. "matmul 'Y': A 'X' has K=128 but B 'W' has K=64".
// - In the formulas below, x is f32(Y[..., j]) and N is the extent of Y's last axis.
#pragma once

#include <string>

#include "te/tensor.h"

namespace comfuse::te {

/// How the second operand of a matmul is stored.
enum class BLayout : std::uint8_t {
  kRowMajor,  // B is [K, N] (batched: [Bt, K, N])
  kColMajor,  // B is [N, K] (batched: [Bt, N, K]), like a linear layer's weight
};

/// C = A·B (A·Bᵀ for kColMajor). A is [M, K] with B 2-D, or [Bt, M, K] with B 3-D of the same batch Bt
/// (a 2-D B beside a 3-D A is rejected: broadcast weights are not a pattern the planner handles).
/// The body is exactly one reduction over a reduce axis `k`, nothing around it — the pattern the
/// planner and the reference interpreter recognise as a contraction:
///   row-major: C[i, j] = sum[k](f32(A[i, k]) * f32(B[k, j]))
///   col-major: C[i, j] = sum[k](f32(A[i, k]) * f32(B[j, k]))
/// Result: f32 [M, N] or [Bt, M, N]. Errors: ranks other than 2/3, rank or batch mismatch, K mismatch.
Tensor matmul(const Tensor& A, const Tensor& B, BLayout b_layout, const std::string& name);

/// out[..., j] = x + f32(b[j]): a bias of shape [N] broadcast over all leading axes of Y (rank ≥ 1).
Tensor bias_add(const Tensor& Y, const Tensor& b, const std::string& name);

/// out = x + f32(R[...]) with R of exactly Y's shape.
Tensor residual_add(const Tensor& Y, const Tensor& R, const std::string& name);

/// out = x * s (s rounded to f32; must be finite). Any rank.
Tensor scale(const Tensor& Y, double s, const std::string& name);

/// out = max(x, 0). Any rank.
Tensor relu(const Tensor& Y, const std::string& name);

/// GELU, tanh approximation: out = 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x³))), where
/// 0.7978845608 = √(2/π); written as ((0.5 * x) * (1.0 + tanh(c * (x + 0.044715 * pow(x, 3))))). Any rank.
Tensor gelu_tanh(const Tensor& Y, const std::string& name);

/// GELU, exact form: out = 0.5 * x * (1 + erf(x / √2)), with x / √2 written as x * 0.7071067811865476.
/// Any rank.
Tensor gelu_erf(const Tensor& Y, const std::string& name);

/// Tanh soft-capping: out = cap * tanh(x / cap). `cap` must be finite and positive. Any rank.
Tensor tanh_softcap(const Tensor& Y, double cap, const std::string& name);

/// LayerNorm over the last axis (rank ≥ 2; the statistics drop the last axis), two-pass:
///   <name>_mean[r] = sum[j](x) / N
///   <name>_var[r]  = sum[j](pow(x - mean[r], 2)) / N        (biased variance, as PyTorch)
///   <name>[r, j]   = (x - mean[r]) * rsqrt(var[r] + eps) * f32(gamma[j]) + f32(beta[j])
/// where r stands for all leading indices. gamma and beta are [N]. eps must be finite and ≥ 0.
Tensor layer_norm(const Tensor& Y, const Tensor& gamma, const Tensor& beta, double eps,
                  const std::string& name);

/// RMSNorm over the last axis (rank ≥ 2):
///   <name>_ms[r] = sum[j](pow(x, 2)) / N                    (mean square)
///   <name>[r, j] = x * rsqrt(ms[r] + eps) * f32(gamma[j])
/// gamma is [N]; eps must be finite and ≥ 0.
Tensor rms_norm(const Tensor& Y, const Tensor& gamma, double eps, const std::string& name);

/// Softmax over the last axis (rank ≥ 2; a 1-D tensor is rejected: give it shape [1, N]):
///   <name>_max[r]   = max[j](x)
///   <name>_exp[r, j] = exp(x - max[r])
///   <name>_sum[r]   = sum[j](exp[r, j])
///   <name>[r, j]    = exp[r, j] / sum[r]
/// A row of all -inf (fully masked) gives NaN, as in PyTorch.
Tensor softmax(const Tensor& Y, const std::string& name);

/// Causal mask on the last two axes of S (rank ≥ 2, [.., Lq, Lk]), aligned to the bottom right so that the
/// last query sees every key: out[.., i, j] = select(j <= i + (Lk - Lq), x, -inf); the offset term is left
/// out when Lq == Lk. Lq > Lk is rejected: the first rows would be fully masked.
Tensor causal_mask(const Tensor& S, const std::string& name);

/// out = dtype(Y[...]): conversion with the GPU's rounding (nearest-even). Any input dtype; dtype must not be
/// bool. The only op whose result is not f32.
Tensor cast_to(const Tensor& Y, DType dtype, const std::string& name);

}  // namespace comfuse::te
