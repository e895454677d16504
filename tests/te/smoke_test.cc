// A first end-to-end use of the DSL: build a small GEMM program and print it.
#include <gtest/gtest.h>

#include "te/equality.h"
#include "te/printer.h"
#include "te/program.h"

namespace comfuse::te {
namespace {

Program small_gemm() {
  auto X = placeholder({4, 8}, DType::bf16, "X");
  auto W = placeholder({8, 3}, DType::bf16, "W");
  auto k = reduce_axis(8, "k");
  auto Y = compute(
      {4, 3}, [&](Var i, Var j) { return sum(cast(DType::f32, X(i, k)) * cast(DType::f32, W(k, j)), {k}); },
      "Y");
  return Program({X, W}, {Y});
}

TEST(Smoke, BuildsPrintsAndCompares) {
  Program a = small_gemm(), b = small_gemm();
  EXPECT_EQ(to_string(a),
            "X: bf16[4, 8] input\n"
            "W: bf16[8, 3] input\n"
            "Y: f32[4, 3] = compute(i0, i1) sum[k<8]((f32(X[i0, k]) * f32(W[k, i1])))\n"
            "outputs: Y\n");
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

}  // namespace
}  // namespace comfuse::te
