// The program at another row count: the suite's fused programs cut into fewer rows are what their builders
// make at those rows, and programs whose rows depend on each other are refused by name.
#include "te/row_slice.h"

#include <gtest/gtest.h>

#include <cstring>

#include "error_of.h"
#include "te/interpreter.h"
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

TEST(RowBlock, ABlockFromTheFirstRowIsWhatTheBuilderMakes) {
  const Shape whole{{"M", 512}, {"K", 64}, {"N", 128}};
  Shape part = whole;
  part["M"] = 64;
  for (const char* name : {"post_layernorm", "gemm_softcap_softmax"}) {
    EXPECT_EQ(workload_key(row_block(build_workload(name, whole), 0, 64)),
              workload_key(build_workload(name, part)))
        << name;
  }
}

// Rows `first` to `first + count` of `buffer`'s leading axis.
HostBuffer rows_of(const HostBuffer& buffer, std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> shape = buffer.shape();
  const std::size_t row_bytes = buffer.size_bytes() / static_cast<std::size_t>(shape[0]);
  shape[0] = count;
  HostBuffer part(buffer.dtype(), shape);
  std::memcpy(part.data(), static_cast<const char*>(buffer.data()) + first * row_bytes, count * row_bytes);
  return part;
}

// A causal mask's rows depend on their index: a block of them counts that index from its first row, and so
// computes the whole program's rows, where a program rebuilt with fewer rows would mask from row 0 again.
TEST(RowBlock, ACausalMasksBlockComputesThoseRowsOfTheWholeProgram) {
  const Tensor X = placeholder({64, 32}, DType::bf16, "X");
  const Tensor W = placeholder({96, 32}, DType::bf16, "W");  // Lq = 64 < Lk = 96: the mask's offset is 32
  const Tensor masked = causal_mask(matmul(X, W, BLayout::kColMajor, "S"), "masked");
  const Tensor Y = compute(
      {64, 96}, [&](Var i, Var j) { return cast(DType::bf16, masked(i, j)); }, "Y");
  const Program whole({X, W}, {Y});
  const std::vector<HostBuffer> inputs = {HostBuffer::random(DType::bf16, {64, 32}, 1),
                                          HostBuffer::random(DType::bf16, {96, 32}, 2)};
  const HostBuffer expected = evaluate(whole, inputs)[0];
  for (const std::int64_t first : {0, 16, 48}) {
    const Program block = row_block(whole, first, 16);
    const HostBuffer got = evaluate(block, {rows_of(inputs[0], first, 16), inputs[1]})[0];
    const HostBuffer want = rows_of(expected, first, 16);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size_bytes()), 0) << "rows from " << first;
  }
  // The same block rebuilt at 16 rows (a mask offset of 80, not 32) differs: the test can tell.
  const Tensor X16 = placeholder({16, 32}, DType::bf16, "X");
  const Tensor masked16 = causal_mask(matmul(X16, W, BLayout::kColMajor, "S"), "masked");
  const Tensor Y16 = compute(
      {16, 96}, [&](Var i, Var j) { return cast(DType::bf16, masked16(i, j)); }, "Y");
  const HostBuffer rebuilt = evaluate(Program({X16, W}, {Y16}), {rows_of(inputs[0], 16, 16), inputs[1]})[0];
  EXPECT_NE(std::memcmp(rebuilt.data(), rows_of(expected, 16, 16).data(), rebuilt.size_bytes()), 0);
  EXPECT_EQ(error_of([&] { row_block(whole, 56, 16); }),
            "row_block: rows 56 to 72 are not rows of the program's 64");
}

}  // namespace
}  // namespace comfuse::te
