// What the back-to-back planner refuses, and the messages it gives.
#include <gtest/gtest.h>

#include "schedule/b2b_plan.h"
#include "te/error_of.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

using namespace te;

Tensor bf16(std::vector<std::int64_t> shape, const std::string& name) {
  return placeholder(std::move(shape), DType::bf16, name);
}

std::string plan_error(const Program& program) {
  return error_of([&] { plan_b2b(program); });
}

TEST(B2BPlanErrors, OneContractionIsPlanFusionsCase) {
  EXPECT_EQ(plan_error(build_workload("post_layernorm", {{"M", 64}, {"K", 64}, {"N", 64}})),
            "the program has 1 contraction(s): back-to-back fusion needs two (one is plan_fusion's case)");
}

TEST(B2BPlanErrors, ReductionsInsideArithmeticAreRefused) {
  const Tensor X = bf16({32, 16}, "X"), W1 = bf16({48, 16}, "W1"), W2 = bf16({8, 48}, "W2");
  const Tensor g = bf16({48}, "g"), b = bf16({48}, "b");
  const Tensor h =
      cast_to(layer_norm(matmul(X, W1, BLayout::kColMajor, "mm1"), g, b, 1e-5, "ln"), DType::bf16, "h");
  EXPECT_EQ(
      plan_error(Program({X, W1, W2, g, b}, {matmul(h, W2, BLayout::kColMajor, "mm2")})),
      "'ln_mean' wraps a reduction over the chained columns in arithmetic: write the reduction as its own "
      "[.., M] compute, so that its online form can be derived");
}

TEST(B2BPlanErrors, ASumOverASumHasNoOnlineForm) {
  // Variance after the mean, each its own compute: the second pass needs the final mean.
  const Tensor X = bf16({32, 16}, "X"), W1 = bf16({48, 16}, "W1"), W2 = bf16({8, 48}, "W2");
  const Tensor mm1 = matmul(X, W1, BLayout::kColMajor, "mm1");
  auto j = reduce_axis(48, "j"), j2 = reduce_axis(48, "j");
  const Tensor total = compute(
      {32}, [&](Var i) { return sum(mm1(i, j), {j}); }, "total");
  const Tensor centred = compute(
      {32, 48}, [&](Var i, Var c) { return mm1(i, c) - total(i) * (1.0 / 48); }, "centred");
  const Tensor sq = compute(
      {32, 48}, [&](Var i, Var c) { return centred(i, c) * centred(i, c); }, "sq");
  const Tensor spread = compute(
      {32}, [&](Var i) { return sum(sq(i, j2), {j2}); }, "spread");
  const Tensor h = compute(
      {32, 48}, [&](Var i, Var c) { return cast(DType::bf16, centred(i, c) / spread(i)); }, "h");
  EXPECT_EQ(plan_error(Program({X, W1, W2}, {matmul(h, W2, BLayout::kColMajor, "mm2")})),
            "'spread' sums a tile that depends on a sum over the same columns: no online form");
}

TEST(B2BPlanErrors, SquaredShiftedValuesHaveNoOnlineForm) {
  const Tensor Q = bf16({1, 16, 8}, "Q"), K = bf16({1, 16, 8}, "K"), V = bf16({1, 16, 8}, "V");
  const Tensor S = matmul(Q, K, BLayout::kColMajor, "S");
  auto j = reduce_axis(16, "j"), j2 = reduce_axis(16, "j");
  const Tensor top = compute(
      {1, 16}, [&](Var bh, Var i) { return max_reduce(S(bh, i, j), {j}); }, "top");
  const Tensor e = compute(
      {1, 16, 16}, [&](Var bh, Var i, Var c) { return exp(S(bh, i, c) - top(bh, i)); }, "e");
  const Tensor sq = compute(
      {1, 16, 16}, [&](Var bh, Var i, Var c) { return e(bh, i, c) * e(bh, i, c); }, "sq");
  const Tensor total = compute(
      {1, 16}, [&](Var bh, Var i) { return sum(sq(bh, i, j2), {j2}); }, "total");
  const Tensor p = compute(
      {1, 16, 16}, [&](Var bh, Var i, Var c) { return cast(DType::bf16, e(bh, i, c) / total(bh, i)); }, "p");
  EXPECT_EQ(
      plan_error(Program({Q, K, V}, {matmul(p, V, BLayout::kRowMajor, "O")})),
      "'(e[i0, i1, i2] * e[i0, i1, i2])' combines a running max or a shifted value in a way that has no "
      "online form (only exp(x - max), and products, quotients and sums of values shifted by the same max)");
}

TEST(B2BPlanErrors, IntermediateOutputsAreRefused) {
  const Tensor X = bf16({32, 16}, "X"), W1 = bf16({48, 16}, "W1"), W2 = bf16({8, 48}, "W2");
  const Tensor h = cast_to(relu(matmul(X, W1, BLayout::kColMajor, "mm1"), "act"), DType::bf16, "h");
  EXPECT_EQ(plan_error(Program({X, W1, W2}, {matmul(h, W2, BLayout::kColMajor, "mm2"), h})),
            "output 'h' is computed between the contractions: a back-to-back kernel keeps those on chip");
}

TEST(B2BPlanErrors, GemmOneMustFeedGemmTwosFirstOperand) {
  const Tensor X = bf16({32, 16}, "X"), W1 = bf16({48, 16}, "W1"), A = bf16({8, 32}, "A");
  const Tensor h = cast_to(matmul(X, W1, BLayout::kColMajor, "mm1"), DType::bf16, "h");
  EXPECT_EQ(
      plan_error(Program({X, W1, A}, {matmul(A, h, BLayout::kRowMajor, "mm2")})),
      "contraction 'mm2' reads 'h', computed from 'mm1', as its second operand: back-to-back fusion chains "
      "GEMM1's output into GEMM2's first operand");
}

}  // namespace
}  // namespace comfuse::schedule
