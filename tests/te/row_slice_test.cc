// The program at another row count: the suite's fused programs cut into fewer rows are what their builders
// make at those rows, and programs whose rows depend on each other are refused by name.
#include "te/row_slice.h"

#include <gtest/gtest.h>

#include "error_of.h"
#include "te/json.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::te {
namespace {

TEST(WithRows, TheSuitesFusedProgramsAtFewerRowsAreWhatTheirBuildersMake) {
  for (const char* name : {"gemm", "gemm_bias_relu", "post_layernorm", "post_rmsnorm", "gemm_layernorm_relu",
                           "gemm_gelu_layernorm", "gemm_softmax", "gemm_softcap_softmax", "mlp_gelu"}) {
    SCOPED_TRACE(name);
    Shape whole{{"M", 512}, {"K", 64}, {"N", 128}};
    if (std::string(name).rfind("mlp", 0) == 0) whole["O"] = 64;
    Shape part = whole;
    part["M"] = 96;
    const Program cut = with_rows(build_workload(name, whole), 96);
    EXPECT_EQ(workload_key(cut), workload_key(build_workload(name, part)));
    EXPECT_EQ(workload_key(with_rows(cut, 512)), workload_key(build_workload(name, whole))) << "and back";
  }
}

TEST(WithRows, AVectorReadByRowIsCutAndOneReadByColumnIsNot) {
  const Tensor X = placeholder({64, 32}, DType::bf16, "X");
  const Tensor W = placeholder({64, 32}, DType::bf16, "W");  // as many rows as X: read whole all the same
  const Tensor scale = placeholder({64}, DType::bf16, "row_scale");
  const Tensor mm = matmul(X, W, BLayout::kColMajor, "mm");
  const Tensor Y = compute(
      {64, 64}, [&](Var i, Var j) { return cast(DType::bf16, mm(i, j) * cast(DType::f32, scale(i))); }, "Y");
  const Program cut = with_rows(Program({X, W, scale}, {Y}), 16);
  EXPECT_EQ(cut.inputs()[0].shape(), (std::vector<std::int64_t>{16, 32}));
  EXPECT_EQ(cut.inputs()[1].shape(), (std::vector<std::int64_t>{64, 32}));
  EXPECT_EQ(cut.inputs()[2].shape(), (std::vector<std::int64_t>{16}));
  EXPECT_EQ(cut.outputs()[0].shape(), (std::vector<std::int64_t>{16, 64}));
}

TEST(WithRows, ProgramsWhoseRowsDependOnEachOtherAreRefusedByName) {
  const Tensor X = placeholder({64, 32}, DType::bf16, "X");
  const Tensor W = placeholder({64, 32}, DType::bf16, "W");
  const Tensor S = matmul(X, W, BLayout::kColMajor, "S");
  // A causal mask compares the row index with the column.
  const Tensor masked = causal_mask(S, "masked");
  const Tensor P = compute(
      {64, 64}, [&](Var i, Var j) { return cast(DType::bf16, masked(i, j)); }, "P");
  EXPECT_EQ(
      error_of([&] {
        with_rows(Program({X, W}, {P}), 16);
      }),
      "rows of 'masked' are not independent: its body uses its row index other than as the first index of "
      "a read (as a causal mask or a transpose does), so the program cannot be cut into rows");
  // A transpose of the product uses the row index as a column; a read of the diagonal, at other rows.
  const Tensor T = compute(
      {64, 64}, [&](Var i, Var j) { return cast(DType::bf16, S(j, i)); }, "T");
  EXPECT_EQ(error_of([&] {
              with_rows(Program({X, W}, {T}), 16);
            }),
            "rows of 'T' are not independent: its body uses its row index other than as the first index of a "
            "read (as a causal mask or a transpose does), so the program cannot be cut into rows");
  const Tensor D = compute(
      {64, 64}, [&](Var, Var j) { return cast(DType::bf16, S(j, j)); }, "D");
  EXPECT_EQ(error_of([&] {
              with_rows(Program({X, W}, {D}), 16);
            }),
            "rows of the program are not independent: 'S' is computed by row and read at other rows");
  // An input read by row and whole.
  const Tensor U = compute(
      {64, 32},
      [&](Var i, Var j) { return cast(DType::bf16, cast(DType::f32, X(i, j)) + cast(DType::f32, X(j, j))); },
      "U");
  EXPECT_EQ(error_of([&] { with_rows(Program({X}, {U}), 16); }),
            "rows of 'U' are not independent: 'X' is read by row in one place and at other rows in another");
  EXPECT_EQ(error_of([&] { with_rows(Program({X, W}, {P}), 0); }), "with_rows: rows=0 must be at least 1");
}

}  // namespace
}  // namespace comfuse::te
