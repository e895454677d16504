// A new operator written in the DSL the way a user would: a gated projection followed by RMSNorm,
//   out = bf16(rmsnorm(silu(X·Wᵀ + b)) · gamma),
// which no op-library workload provides. Used by the tuning example and its test.
#pragma once

#include "te/program.h"

namespace comfuse::examples {

inline te::Program silu_rmsnorm_program(std::int64_t M, std::int64_t K, std::int64_t N) {
  using namespace comfuse::te;
  using F = DType;
  auto X = placeholder({M, K}, F::bf16, "X"), W = placeholder({N, K}, F::bf16, "W");
  auto b = placeholder({N}, F::bf16, "b"), gamma = placeholder({N}, F::bf16, "gamma");
  auto k = reduce_axis(K, "k"), n = reduce_axis(N, "n");
  auto f32 = [](Expr e) { return cast(F::f32, e); };
  auto proj = compute({M, N}, [&](Var i, Var j) { return sum(f32(X(i, k)) * f32(W(j, k)), {k}); }, "proj");
  auto gated = compute({M, N}, [&](Var i, Var j) {
        auto z = proj(i, j) + f32(b(j));
        return z * sigmoid(z);  // SiLU
      }, "gated");
  auto ms = compute({M}, [&](Var i) { return sum(gated(i, n) * gated(i, n), {n}) * (1.0 / N); }, "ms");
  auto out = compute({M, N}, [&](Var i, Var j) {
        return cast(F::bf16, gated(i, j) * rsqrt(ms(i) + 1e-6) * f32(gamma(j)));
      }, "out");
  return Program({X, W, b, gamma}, {out});
}

}  // namespace comfuse::examples
