// Programs the fused GEMM planner cannot take: each CompileError message asserted.
#include <gtest/gtest.h>

#include <functional>

#include "schedule/fusion_plan.h"
#include "support/error.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

using te::DType;
using te::Tensor;
using te::Var;

// The message of the CompileError that planning `program` throws, or a note that it threw none.
std::string plan_error(const std::function<te::Program()>& build) {
  const te::Program program = build();
  try {
    plan_fusion(program);
  } catch (const CompileError& error) {
    return error.what();
  }
  return "(no error)";
}

// X [M, K], W [N, K] in bf16 and mm = X·Wᵀ, the start of most programs below.
struct Gemm {
  Gemm(std::int64_t m, std::int64_t k, std::int64_t n)
      : X(te::placeholder({m, k}, DType::bf16, "X")),
        W(te::placeholder({n, k}, DType::bf16, "W")),
        mm(te::matmul(X, W, te::BLayout::kColMajor, "mm")) {}
  Tensor X, W, mm;
};

TEST(FusionPlanErrors, NoContraction) {
  EXPECT_EQ(plan_error([] {
              const Tensor A = te::placeholder({8, 8}, DType::bf16, "A");
              return te::Program({A}, {te::relu(A, "act")});
            }),
            "program has no contraction (sum over k of A[i, k] * B[.., ..]) to fuse around");
  // A sum over k that is not a product of two reads is no contraction either.
  EXPECT_EQ(plan_error([] {
              const Tensor A = te::placeholder({8, 16}, DType::bf16, "A");
              const Var k = te::reduce_axis(16, "k");
              return te::Program(
                  {A}, {te::compute(
                           {8}, [&](Var i) { return te::sum(te::cast(DType::f32, A(i, k)), {k}); }, "s")});
            }),
            "program has no contraction (sum over k of A[i, k] * B[.., ..]) to fuse around");
}

TEST(FusionPlanErrors, SecondContraction) {
  EXPECT_EQ(
      plan_error([] {
        return te::build_workload("mlp_relu", {{"M", 64}, {"K", 32}, {"N", 64}, {"O", 32}});
      }),
      "contraction 'mm2' reads 'H', which is computed: back-to-back contractions are planned by the B2B "
      "planner");
  EXPECT_EQ(
      plan_error([] {
        return te::build_workload("mlp_gelu", {{"M", 64}, {"K", 32}, {"N", 64}, {"O", 32}});
      }),
      "contraction 'mm2' reads 'H', which is computed: back-to-back contractions are planned by the B2B "
      "planner");
  // Two independent contractions of the inputs.
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Tensor W2 = te::placeholder({48, 32}, DType::bf16, "W2");
              const Tensor mm2 = te::matmul(g.X, W2, te::BLayout::kColMajor, "mm2");
              const Tensor sum = te::compute(
                  {64, 48}, [&](Var i, Var j) { return g.mm(i, j) + mm2(i, j); }, "sum");
              return te::Program({g.X, g.W, W2}, {sum});
            }),
            "op 'mm2' is a second contraction after 'mm': back-to-back contractions are planned by the B2B "
            "planner");
}

TEST(FusionPlanErrors, BatchedContraction) {
  EXPECT_EQ(plan_error([] {
              return te::build_workload("attention", {{"BH", 2}, {"L", 64}, {"D", 32}, {"CAUSAL", 0}});
            }),
            "op 'S' is a batched contraction of rank 3: the fused GEMM planner handles [M, N] contractions");
  EXPECT_EQ(plan_error([] {
              return te::build_workload("target_attention", {{"BH", 2}, {"LQ", 8}, {"LK", 64}, {"D", 32}});
            }),
            "op 'S' is a batched contraction of rank 3: the fused GEMM planner handles [M, N] contractions");
}

TEST(FusionPlanErrors, TransposedReadOfTheContraction) {
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 64);
              const Tensor t = te::compute(
                  {64, 64}, [&](Var i, Var j) { return g.mm(j, i); }, "t");
              return te::Program({g.X, g.W}, {t});
            }),
            "op 't' cannot be fused: it reads 'mm' as mm[i1, i0]: tiles are read element-aligned, at (row, "
            "column)");
}

TEST(FusionPlanErrors, ShiftedRead) {
  EXPECT_EQ(
      plan_error([] {
        const Gemm g(64, 32, 48);
        const Tensor t = te::compute(
            {64, 48}, [&](Var i, Var j) { return g.mm(i, te::min(j + 1, 47)); }, "t");
        return te::Program({g.X, g.W}, {t});
      }),
      "op 't' cannot be fused: it reads 'mm' as mm[i0, min((i1 + 1), 47)]: tiles are read element-aligned, "
      "at (row, column)");
  // A row value read at another row.
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Var c = te::reduce_axis(48, "c");
              const Tensor r = te::compute(
                  {64}, [&](Var i) { return te::sum(g.mm(i, c), {c}); }, "r");
              const Tensor t = te::compute(
                  {64, 48}, [&](Var i, Var j) { return g.mm(i, j) - r(63 - i); }, "t");
              return te::Program({g.X, g.W}, {t});
            }),
            "op 't' cannot be fused: it reads row value 'r' as r[(63 - i0)]: expected (row)");
  // An input read at a shifted column.
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Tensor b = te::placeholder({48}, DType::f32, "b");
              const Tensor t = te::compute(
                  {64, 48}, [&](Var i, Var j) { return g.mm(i, j) + b(47 - j); }, "t");
              return te::Program({g.X, g.W, b}, {t});
            }),
            "op 't' cannot be fused: it reads input 'b' as b[(47 - i1)]: inputs are read at (row, column), "
            "(column) "
            "or (row) of the tile");
}

TEST(FusionPlanErrors, ReductionOverRows) {
  // M == N, so the column sums have the shape of row values: the read gives the reduction away.
  EXPECT_EQ(
      plan_error([] {
        const Gemm g(64, 32, 64);
        const Var r = te::reduce_axis(64, "r");
        const Tensor colsum = te::compute(
            {64}, [&](Var j) { return te::sum(g.mm(r, j), {r}); }, "colsum");
        return te::Program({g.X, g.W}, {colsum});
      }),
      "op 'colsum' cannot be fused: it reads 'mm' as mm[r, i0]: tiles are read element-aligned, at (row, "
      "column)");
  // M != N: the column sums are [N].
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Var r = te::reduce_axis(64, "r");
              const Tensor colsum = te::compute(
                  {48}, [&](Var j) { return te::sum(g.mm(r, j), {r}); }, "colsum");
              return te::Program({g.X, g.W}, {colsum});
            }),
            "op 'colsum' cannot be fused: its shape is neither [M, N] = [64, 48] nor [M] = [64]");
  // A reduction over part of a row.
  EXPECT_EQ(
      plan_error([] {
        const Gemm g(64, 32, 48);
        const Var c = te::reduce_axis(16, "c");
        const Tensor part = te::compute(
            {64}, [&](Var i) { return te::sum(g.mm(i, c), {c}); }, "part");
        return te::Program({g.X, g.W}, {part});
      }),
      "op 'part' cannot be fused: it reduces over 1 axes of extent 16: only reductions over the N=48 columns "
      "of a row are fused");
  // A reduction inside a tile.
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Var c = te::reduce_axis(48, "c");
              const Tensor t = te::compute(
                  {64, 48}, [&](Var i, Var j) { return g.mm(i, j) - te::max_reduce(g.mm(i, c), {c}); }, "t");
              return te::Program({g.X, g.W}, {t});
            }),
            "op 't' cannot be fused: it reduces inside a [M, N] tile: write the reduction as a [M] tensor");
}

TEST(FusionPlanErrors, OpIndependentOfTheContraction) {
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Tensor R = te::placeholder({64, 48}, DType::bf16, "R");
              const Tensor r2 = te::scale(R, 2.0, "r2");
              const Tensor t = te::compute(
                  {64, 48}, [&](Var i, Var j) { return g.mm(i, j) + r2(i, j); }, "t");
              return te::Program({g.X, g.W, R}, {t});
            }),
            "op 'r2' cannot be fused: it does not depend on the contraction 'mm'");
}

TEST(FusionPlanErrors, EpilogueReadsAnOperand) {
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 64, 64);
              const Tensor t = te::compute(
                  {64, 64}, [&](Var i, Var j) { return g.mm(i, j) + te::cast(DType::f32, g.X(i, j)); }, "t");
              return te::Program({g.X, g.W}, {t});
            }),
            "op 't' cannot be fused: it reads the contraction operand 'X' in its epilogue");
}

TEST(FusionPlanErrors, InputReadAsRowAndAsColumnVector) {
  // Possible only when M == N.
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 64);
              const Tensor v = te::placeholder({64}, DType::f32, "v");
              const Tensor t = te::compute(
                  {64, 64}, [&](Var i, Var j) { return g.mm(i, j) + v(j) * v(i); }, "t");
              return te::Program({g.X, g.W, v}, {t});
            }),
            "op 't' cannot be fused: it reads input 'v' both as row vector [N] and as column vector [M]");
  // Across two ops.
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 64);
              const Tensor v = te::placeholder({64}, DType::f32, "v");
              const Tensor t = te::compute(
                  {64, 64}, [&](Var i, Var j) { return g.mm(i, j) + v(i); }, "t");
              const Tensor u = te::compute(
                  {64, 64}, [&](Var i, Var j) { return t(i, j) + v(j); }, "u");
              return te::Program({g.X, g.W, v}, {u});
            }),
            "op 'u' cannot be fused: it reads input 'v' both as column vector [M] and as row vector [N]");
}

TEST(FusionPlanErrors, ShapeNeitherTileNorRow) {
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Tensor first_row = te::compute(
                  {48}, [&](Var j) { return g.mm(0, j); }, "first_row");
              return te::Program({g.X, g.W}, {first_row});
            }),
            "op 'first_row' cannot be fused: its shape is neither [M, N] = [64, 48] nor [M] = [64]");
  EXPECT_EQ(plan_error([] {
              const Gemm g(64, 32, 48);
              const Tensor half = te::compute(
                  {32, 48}, [&](Var i, Var j) { return g.mm(i, j); }, "half");
              return te::Program({g.X, g.W}, {half});
            }),
            "op 'half' cannot be fused: its shape is neither [M, N] = [64, 48] nor [M] = [64]");
}

TEST(FusionPlanErrors, OperandDtypes) {
  EXPECT_EQ(plan_error([] {
              const Tensor X = te::placeholder({64, 32}, DType::f16, "X");
              const Tensor W = te::placeholder({48, 32}, DType::bf16, "W");
              return te::Program({X, W}, {te::matmul(X, W, te::BLayout::kColMajor, "mm")});
            }),
            "contraction 'mm' mixes operand dtypes f16 and bf16");
  EXPECT_EQ(plan_error([] {
              const Tensor X = te::placeholder({64, 32}, DType::f32, "X");
              const Tensor W = te::placeholder({48, 32}, DType::f32, "W");
              return te::Program({X, W}, {te::matmul(X, W, te::BLayout::kColMajor, "mm")});
            }),
            "contraction 'mm' operand 'X' is f32: the tensor-core path takes bf16 or f16");
  EXPECT_EQ(plan_error([] {
              const Tensor X = te::placeholder({64, 32}, DType::bf16, "X");
              const Tensor W = te::placeholder({48, 32}, DType::f32, "W");
              return te::Program({X, W}, {te::matmul(X, W, te::BLayout::kColMajor, "mm")});
            }),
            "contraction 'mm' operand 'W' is f32: the tensor-core path takes bf16 or f16");
}

TEST(FusionPlanErrors, ContractionShapes) {
  // The first operand read transposed.
  EXPECT_EQ(plan_error([] {
              const Tensor A = te::placeholder({32, 64}, DType::bf16, "A");
              const Tensor W = te::placeholder({48, 32}, DType::bf16, "W");
              const Var k = te::reduce_axis(32, "k");
              const Tensor mm = te::compute(
                  {64, 48},
                  [&](Var i, Var j) {
                    return te::sum(te::cast(DType::f32, A(k, i)) * te::cast(DType::f32, W(j, k)), {k});
                  },
                  "mm");
              return te::Program({A, W}, {mm});
            }),
            "contraction 'mm' reads its first operand 'A' as f32(A[k, i0]): expected A[i0, k]");
  // The second operand read at a fixed column.
  EXPECT_EQ(plan_error([] {
              const Tensor X = te::placeholder({64, 32}, DType::bf16, "X");
              const Tensor W = te::placeholder({48, 32}, DType::bf16, "W");
              const Var k = te::reduce_axis(32, "k");
              const Tensor mm = te::compute(
                  {64, 48},
                  [&](Var i, Var) {
                    return te::sum(te::cast(DType::f32, X(i, k)) * te::cast(DType::f32, W(0, k)), {k});
                  },
                  "mm");
              return te::Program({X, W}, {mm});
            }),
            "contraction 'mm' reads its second operand 'W' as f32(W[0, k]): expected W[i1, k] or W[k, i1]");
  // Accumulation in bf16.
  EXPECT_EQ(plan_error([] {
              const Tensor X = te::placeholder({64, 32}, DType::bf16, "X");
              const Tensor W = te::placeholder({48, 32}, DType::bf16, "W");
              const Var k = te::reduce_axis(32, "k");
              const Tensor mm = te::compute(
                  {64, 48}, [&](Var i, Var j) { return te::sum(X(i, k) * W(j, k), {k}); }, "mm");
              return te::Program({X, W}, {mm});
            }),
            "contraction 'mm' accumulates in bf16: the tensor cores accumulate in f32");
}

}  // namespace
}  // namespace comfuse::schedule
