// The README's DSL example: post-LayerNorm, LayerNorm(X·Wᵀ + b + R), written with DSL primitives only.
#pragma once

#include <cmath>

#include "te/program.h"

namespace comfuse::examples {

inline te::Program post_layernorm_program(std::int64_t M, std::int64_t K, std::int64_t N) {
  using namespace comfuse::te;
  using F = DType;
  auto X = placeholder({M, K}, F::bf16, "X"), W = placeholder({N, K}, F::bf16, "W");
  auto b = placeholder({N}, F::bf16, "b"), R = placeholder({M, N}, F::bf16, "R");
  auto gamma = placeholder({N}, F::bf16, "gamma"), beta = placeholder({N}, F::bf16, "beta");
  auto k = reduce_axis(K, "k"), n1 = reduce_axis(N, "n"), n2 = reduce_axis(N, "n");
  auto f32 = [](Expr e) { return cast(F::f32, e); };
  auto Y = compute(
      {M, N}, [&](Var i, Var j) { return sum(f32(X(i, k)) * f32(W(j, k)), {k}); }, "Y");
  auto Z = compute(
      {M, N}, [&](Var i, Var j) { return Y(i, j) + f32(b(j)) + f32(R(i, j)); }, "Z");
  auto mean = compute(
      {M}, [&](Var i) { return sum(Z(i, n1), {n1}) * (1.0 / N); }, "mean");
  auto var = compute(
      {M}, [&](Var i) { return sum(pow(Z(i, n2) - mean(i), 2), {n2}) * (1.0 / N); }, "var");
  auto out = compute(
      {M, N},
      [&](Var i, Var j) {
        auto normed = (Z(i, j) - mean(i)) * rsqrt(var(i) + 1e-5);
        return cast(F::bf16, normed * f32(gamma(j)) + f32(beta(j)));
      },
      "out");
  return Program({X, W, b, R, gamma, beta}, {out});
}

}  // namespace comfuse::examples
