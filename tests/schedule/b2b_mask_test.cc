// Recognising the causal mask of a back-to-back program: where it holds, the numerator and the sums are zero
// above the diagonal in the reference, so the kernel may skip those chunks; elsewhere nothing is claimed.
#include "schedule/b2b_mask.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "te/interpreter.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

B2BPlan plan_of(const te::Program& program) {
  return plan_b2b(program);
}

// softmax(select(j <op> i + offset, S, -inf)) · V over one batch, built in the DSL.
te::Program masked_attention(std::int64_t L, te::CompareOp op, std::int64_t offset, bool swap) {
  using namespace te;
  auto Q = placeholder({1, L, 64}, DType::bf16, "Q"), K = placeholder({1, L, 64}, DType::bf16, "K");
  auto V = placeholder({1, L, 64}, DType::bf16, "V");
  auto d = reduce_axis(64, "d"), j1 = reduce_axis(L, "j"), j2 = reduce_axis(L, "j"), l = reduce_axis(L, "l");
  auto f32 = [](Expr e) { return cast(DType::f32, e); };
  auto S = compute(
      {1, L, L}, [&](Var b, Var i, Var j) { return sum(f32(Q(b, i, d)) * f32(K(b, j, d)), {d}); }, "S");
  const double inf = std::numeric_limits<double>::infinity();
  auto M = compute(
      {1, L, L},
      [&](Var b, Var i, Var j) {
        Expr row = Expr(i) + constant(DType::i32, static_cast<double>(offset));
        Expr cond = swap ? compare(op, row, Expr(j)) : compare(op, Expr(j), row);
        return select(cond, S(b, i, j), constant(DType::f32, -inf));
      },
      "M");
  auto mx = compute(
      {1, L}, [&](Var b, Var i) { return max_reduce(M(b, i, j1), {j1}); }, "mx");
  auto e = compute(
      {1, L, L}, [&](Var b, Var i, Var j) { return exp(M(b, i, j) - mx(b, i)); }, "e");
  auto s = compute(
      {1, L}, [&](Var b, Var i) { return sum(e(b, i, j2), {j2}); }, "s");
  auto P = compute(
      {1, L, L}, [&](Var b, Var i, Var j) { return cast(DType::bf16, e(b, i, j) / s(b, i)); }, "P");
  auto O = compute(
      {1, L, 64}, [&](Var b, Var i, Var c) { return sum(f32(P(b, i, l)) * f32(V(b, l, c)), {l}); }, "O");
  return Program({Q, K, V}, {O});
}

TEST(B2BMask, CausalAttentionIsMaskedAboveTheDiagonal) {
  EXPECT_EQ(masked_above_diagonal(
                plan_of(te::build_workload("attention", {{"BH", 2}, {"L", 100}, {"D", 64}, {"CAUSAL", 1}}))),
            std::optional<std::int64_t>{0});
  EXPECT_EQ(masked_above_diagonal(
                plan_of(te::build_workload("attention", {{"BH", 2}, {"L", 100}, {"D", 64}, {"CAUSAL", 0}}))),
            std::nullopt);
  EXPECT_EQ(masked_above_diagonal(
                plan_of(te::build_workload("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 64}}))),
            std::nullopt);
}

TEST(B2BMask, OffsetsAndOrientations) {
  using te::CompareOp;
  EXPECT_EQ(masked_above_diagonal(plan_of(masked_attention(40, CompareOp::kLe, 3, false))), 3);  // j <= i + 3
  EXPECT_EQ(masked_above_diagonal(plan_of(masked_attention(40, CompareOp::kLt, 3, false))), 2);  // j < i + 3
  EXPECT_EQ(masked_above_diagonal(plan_of(masked_attention(40, CompareOp::kGe, -2, true))),
            -2);                                                                                 // i - 2 >= j
  EXPECT_EQ(masked_above_diagonal(plan_of(masked_attention(40, CompareOp::kGt, 0, true))), -1);  // i > j
  // j >= i keeps the upper triangle: nothing above a diagonal vanishes.
  EXPECT_EQ(masked_above_diagonal(plan_of(masked_attention(40, CompareOp::kGe, 0, false))), std::nullopt);
}

TEST(B2BMask, FlopsCountThePairsTheMaskKeeps) {
  // Without a mask: 2 (K + O) FLOPs for each of the M x N pairs of each batch.
  EXPECT_EQ(b2b_flops(plan_of(te::build_workload("mlp_relu", {{"M", 64}, {"K", 32}, {"N", 48}, {"O", 16}}))),
            2LL * 64 * 48 * (32 + 16));
  EXPECT_EQ(
      b2b_flops(plan_of(te::build_workload("attention", {{"BH", 3}, {"L", 100}, {"D", 64}, {"CAUSAL", 0}}))),
      3LL * 2 * 100 * 100 * (64 + 64));
  // Causal: row i keeps columns 0..i, 100 * 101 / 2 pairs.
  EXPECT_EQ(
      b2b_flops(plan_of(te::build_workload("attention", {{"BH", 3}, {"L", 100}, {"D", 64}, {"CAUSAL", 1}}))),
      3LL * 2 * (100 * 101 / 2) * (64 + 64));
  // j < i + 3 over L = 40: row i keeps min(40, i + 3) columns.
  std::int64_t pairs = 0;
  for (int i = 0; i < 40; ++i) pairs += std::min(40, i + 3);
  EXPECT_EQ(b2b_flops(plan_of(masked_attention(40, te::CompareOp::kLt, 3, false))), 2 * pairs * (64 + 64));
  // i - 2 >= j: row i keeps max(0, i - 1) columns; the first two keep none.
  pairs = 0;
  for (int i = 0; i < 40; ++i) pairs += std::max(0, i - 1);
  EXPECT_EQ(b2b_flops(plan_of(masked_attention(40, te::CompareOp::kGe, -2, true))), 2 * pairs * (64 + 64));
}

TEST(B2BMask, TheNumeratorAndSumVanishAboveTheDiagonalInTheReference) {
  const te::Program program = masked_attention(40, te::CompareOp::kLt, 3, false);
  const std::int64_t d = *masked_above_diagonal(plan_of(program));
  std::vector<te::HostBuffer> inputs;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const te::Tensor& t = program.inputs()[i];
    inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), 7 + i));
  }
  const auto all = te::evaluate_all(program, inputs);
  const te::HostBuffer& e = all.at("e");
  int above = 0;
  for (std::int64_t i = 0; i < 40; ++i) {
    for (std::int64_t j = 0; j < 40; ++j) {
      if (j > i + d) {
        EXPECT_EQ(e.get(i * 40 + j), 0.0) << i << "," << j;
        ++above;
      } else if (j == i + d) {
        EXPECT_GT(e.get(i * 40 + j), 0.0) << "the diagonal itself is kept: " << i << "," << j;
      }
    }
  }
  EXPECT_GT(above, 0);
}

}  // namespace
}  // namespace comfuse::schedule
