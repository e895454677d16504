// An attention variant written in the DSL the way a user would: logits soft-capped with tanh before the
// softmax,
//   Y = bf16(softmax(cap · tanh(Q·Kᵀ / (sqrt(D) · cap))) · V),
// which no op-library workload provides. The back-to-back planner derives its online softmax from these lines
// (running max of the capped logits, rescaled sum of their exponentials), and the fused B2B kernel runs it.
#pragma once

#include <cmath>

#include "te/program.h"

namespace comfuse::examples {

inline te::Program softcap_attention_program(std::int64_t BH, std::int64_t L, std::int64_t D, double cap) {
  using namespace comfuse::te;
  using F = DType;
  auto Q = placeholder({BH, L, D}, F::bf16, "Q"), K = placeholder({BH, L, D}, F::bf16, "K");
  auto V = placeholder({BH, L, D}, F::bf16, "V");
  auto d = reduce_axis(D, "d"), j_max = reduce_axis(L, "j"), j_sum = reduce_axis(L, "j"),
       l = reduce_axis(L, "l");
  auto f32 = [](Expr e) { return cast(F::f32, e); };
  const double scale = 1.0 / (std::sqrt(static_cast<double>(D)) * cap);
  auto S = compute(
      {BH, L, L}, [&](Var b, Var i, Var j) { return sum(f32(Q(b, i, d)) * f32(K(b, j, d)), {d}); }, "S");
  auto capped = compute(
      {BH, L, L}, [&](Var b, Var i, Var j) { return cap * tanh(S(b, i, j) * scale); }, "capped");
  auto row_max = compute(
      {BH, L}, [&](Var b, Var i) { return max_reduce(capped(b, i, j_max), {j_max}); }, "row_max");
  auto e = compute(
      {BH, L, L}, [&](Var b, Var i, Var j) { return exp(capped(b, i, j) - row_max(b, i)); }, "e");
  auto row_sum = compute(
      {BH, L}, [&](Var b, Var i) { return sum(e(b, i, j_sum), {j_sum}); }, "row_sum");
  auto P = compute(
      {BH, L, L}, [&](Var b, Var i, Var j) { return cast(F::bf16, e(b, i, j) / row_sum(b, i)); }, "P");
  auto O = compute(
      {BH, L, D}, [&](Var b, Var i, Var c) { return sum(f32(P(b, i, l)) * f32(V(b, l, c)), {l}); }, "O");
  auto Y = compute(
      {BH, L, D}, [&](Var b, Var i, Var c) { return cast(F::bf16, O(b, i, c)); }, "Y");
  return Program({Q, K, V}, {Y});
}

}  // namespace comfuse::examples
