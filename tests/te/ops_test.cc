// The op library: result shapes and dtypes, the printed formulas of small instances, and program validity.
#include "te/ops.h"

#include <gtest/gtest.h>

#include "te/printer.h"
#include "te/program.h"

namespace comfuse::te {
namespace {

std::vector<std::string> tensor_names(const Program& program) {
  std::vector<std::string> names;
  for (const Tensor& t : program.tensors()) names.push_back(t.name());
  return names;
}

// The small operands most tests share: X [4, 8] and W [3, 8] in bf16, Y = X·Wᵀ in f32 [4, 3].
struct Small {
  Tensor X = placeholder({4, 8}, DType::bf16, "X");
  Tensor W = placeholder({3, 8}, DType::bf16, "W");
  Tensor Y = matmul(X, W, BLayout::kColMajor, "Y");
  Tensor v = placeholder({3}, DType::bf16, "v");
  Tensor u = placeholder({3}, DType::bf16, "u");
};

TEST(Matmul, ShapesForBothLayoutsAndBatched) {
  const auto A = placeholder({4, 8}, DType::bf16, "A");
  const auto B_row = placeholder({8, 5}, DType::bf16, "B");
  const auto B_col = placeholder({5, 8}, DType::bf16, "B");
  EXPECT_EQ(matmul(A, B_row, BLayout::kRowMajor, "C").shape(), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(matmul(A, B_col, BLayout::kColMajor, "C").shape(), (std::vector<std::int64_t>{4, 5}));
  const auto A3 = placeholder({2, 4, 8}, DType::bf16, "A");
  const auto B3_row = placeholder({2, 8, 5}, DType::bf16, "B");
  const auto B3_col = placeholder({2, 5, 8}, DType::f16, "B");
  const Tensor C_row = matmul(A3, B3_row, BLayout::kRowMajor, "C");
  const Tensor C_col = matmul(A3, B3_col, BLayout::kColMajor, "C");
  EXPECT_EQ(C_row.shape(), (std::vector<std::int64_t>{2, 4, 5}));
  EXPECT_EQ(C_col.shape(), (std::vector<std::int64_t>{2, 4, 5}));
  EXPECT_EQ(C_row.dtype(), DType::f32);
  EXPECT_EQ(C_col.dtype(), DType::f32);
}

TEST(Matmul, PrintedFormRowMajorBf16) {
  const auto A = placeholder({4, 8}, DType::bf16, "A");
  const auto B = placeholder({8, 5}, DType::bf16, "B");
  EXPECT_EQ(to_string(matmul(A, B, BLayout::kRowMajor, "C")),
            "C: f32[4, 5] = compute(i0, i1) sum[k<8]((f32(A[i0, k]) * f32(B[k, i1])))");
}

TEST(Matmul, PrintedFormBatchedColMajorF32HasNoCasts) {
  const auto A = placeholder({2, 4, 8}, DType::f32, "A");
  const auto B = placeholder({2, 5, 8}, DType::f32, "B");
  EXPECT_EQ(to_string(matmul(A, B, BLayout::kColMajor, "C")),
            "C: f32[2, 4, 5] = compute(i0, i1, i2) sum[k<8]((A[i0, i1, k] * B[i0, i2, k]))");
}

TEST(Matmul, BodyIsExactlyOneSumReduction) {
  const Small s;
  const Expr& body = s.Y->body;
  ASSERT_EQ(body.kind(), ExprKind::kReduce);
  const auto* reduce = body.as<ReduceNode>();
  EXPECT_EQ(reduce->op, ReduceOp::kSum);
  ASSERT_EQ(reduce->axes.size(), 1u);
  EXPECT_EQ(reduce->axes[0].extent(), 8);
  const auto* product = reduce->body.as<BinaryNode>();
  ASSERT_NE(product, nullptr);
  EXPECT_EQ(product->op, BinaryOp::kMul);
  ASSERT_EQ(product->a.kind(), ExprKind::kCast);
  ASSERT_EQ(product->b.kind(), ExprKind::kCast);
  const auto* read_a = product->a.as<CastNode>()->value.as<ReadNode>();
  const auto* read_b = product->b.as<CastNode>()->value.as<ReadNode>();
  ASSERT_NE(read_a, nullptr);
  ASSERT_NE(read_b, nullptr);
  EXPECT_EQ(read_a->tensor.get(), s.X.get());
  EXPECT_EQ(read_b->tensor.get(), s.W.get());
}

TEST(Elementwise, ShapesAndDtypesIn2DAnd3D) {
  for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{4, 3}, {2, 4, 3}}) {
    const auto Y = placeholder(shape, DType::bf16, "Y");
    const auto R = placeholder(shape, DType::bf16, "R");
    const auto b = placeholder({3}, DType::bf16, "b");
    for (const Tensor& t : {bias_add(Y, b, "o"), residual_add(Y, R, "o"), scale(Y, 0.5, "o"), relu(Y, "o"),
                            gelu_tanh(Y, "o"), gelu_erf(Y, "o"), tanh_softcap(Y, 30.0, "o")}) {
      EXPECT_EQ(t.shape(), shape) << to_string(t);
      EXPECT_EQ(t.dtype(), DType::f32) << to_string(t);
      EXPECT_EQ(t.name(), "o");
    }
    std::vector<std::int64_t> square(shape.begin(), shape.end() - 2);  // the mask needs Lq <= Lk
    square.insert(square.end(), {3, 3});
    const Tensor masked = causal_mask(placeholder(square, DType::bf16, "S"), "o");
    EXPECT_EQ(masked.shape(), square);
    EXPECT_EQ(masked.dtype(), DType::f32);
  }
}

TEST(Elementwise, PrintedForms) {
  const Small s;
  EXPECT_EQ(to_string(bias_add(s.Y, s.v, "o")), "o: f32[4, 3] = compute(i0, i1) (Y[i0, i1] + f32(v[i1]))");
  EXPECT_EQ(to_string(residual_add(s.X, s.X, "o")),
            "o: f32[4, 8] = compute(i0, i1) (f32(X[i0, i1]) + f32(X[i0, i1]))");
  EXPECT_EQ(to_string(scale(s.Y, 0.125, "o")), "o: f32[4, 3] = compute(i0, i1) (Y[i0, i1] * 0.125)");
  EXPECT_EQ(to_string(relu(s.X, "o")), "o: f32[4, 8] = compute(i0, i1) max(f32(X[i0, i1]), 0.0)");
  EXPECT_EQ(to_string(tanh_softcap(s.Y, 30.0, "o")),
            "o: f32[4, 3] = compute(i0, i1) (30.0 * tanh((Y[i0, i1] / 30.0)))");
  EXPECT_EQ(to_string(cast_to(s.Y, DType::bf16, "o")), "o: bf16[4, 3] = compute(i0, i1) bf16(Y[i0, i1])");
}

// 0.7978845834732056 is √(2/π) = 0.79788456080 rounded to f32; 0.044714998453855515 is 0.044715 in f32.
TEST(Elementwise, GeluTanhPrintedForm) {
  const Small s;
  EXPECT_EQ(
      to_string(gelu_tanh(s.Y, "g")),
      "g: f32[4, 3] = compute(i0, i1) ((0.5 * Y[i0, i1]) * (1.0 + tanh((0.7978845834732056 * (Y[i0, i1] + "
      "(0.044714998453855515 * pow(Y[i0, i1], 3)))))))");
}

// 0.7071067690849304 is 1/√2 = 0.70710678118 rounded to f32.
TEST(Elementwise, GeluErfPrintedForm) {
  const Small s;
  EXPECT_EQ(to_string(gelu_erf(s.X, "g")),
            "g: f32[4, 8] = compute(i0, i1) ((0.5 * f32(X[i0, i1])) * (1.0 + erf((f32(X[i0, i1]) * "
            "0.7071067690849304))))");
}

TEST(CausalMask, SquareHasNoOffset) {
  const auto S = placeholder({2, 3, 3}, DType::f32, "S");
  EXPECT_EQ(to_string(causal_mask(S, "m")),
            "m: f32[2, 3, 3] = compute(i0, i1, i2) select((i2 <= i1), S[i0, i1, i2], -inf)");
}

TEST(CausalMask, FewerQueriesThanKeysAlignsBottomRight) {
  const auto S = placeholder({2, 5}, DType::bf16, "S");
  EXPECT_EQ(to_string(causal_mask(S, "m")),
            "m: f32[2, 5] = compute(i0, i1) select((i1 <= (i0 + 3)), f32(S[i0, i1]), -inf)");
}

// eps = 1e-5 prints as 9.999999747378752e-06, its value in f32.
TEST(LayerNorm, PrintedFormIsTwoPass) {
  const Small s;
  const Program program({s.X, s.W, s.v, s.u}, {layer_norm(s.Y, s.v, s.u, 1e-5, "ln")});
  EXPECT_EQ(to_string(program),
            "X: bf16[4, 8] input\n"
            "W: bf16[3, 8] input\n"
            "Y: f32[4, 3] = compute(i0, i1) sum[k<8]((f32(X[i0, k]) * f32(W[i1, k])))\n"
            "ln_mean: f32[4] = compute(i0) (sum[j<3](Y[i0, j]) / 3.0)\n"
            "ln_var: f32[4] = compute(i0) (sum[j<3](pow((Y[i0, j] - ln_mean[i0]), 2)) / 3.0)\n"
            "v: bf16[3] input\n"
            "u: bf16[3] input\n"
            "ln: f32[4, 3] = compute(i0, i1) ((((Y[i0, i1] - ln_mean[i0]) * rsqrt((ln_var[i0] + "
            "9.999999747378752e-06))) * f32(v[i1])) + f32(u[i1]))\n"
            "outputs: ln\n");
}

TEST(LayerNorm, BatchedStatisticsDropTheLastAxis) {
  const auto Y = placeholder({2, 4, 3}, DType::bf16, "Y");
  const auto g = placeholder({3}, DType::f32, "g");
  const auto b = placeholder({3}, DType::f32, "b");
  const Program program({Y, g, b}, {layer_norm(Y, g, b, 0.0, "ln")});
  EXPECT_EQ(program.find("ln_mean")->shape(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(program.find("ln_var")->shape(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(program.find("ln")->shape(), (std::vector<std::int64_t>{2, 4, 3}));
  EXPECT_EQ(to_string(*program.find("ln")),
            "ln: f32[2, 4, 3] = compute(i0, i1, i2) ((((f32(Y[i0, i1, i2]) - ln_mean[i0, i1]) * "
            "rsqrt((ln_var[i0, i1] + 0.0))) * g[i2]) + b[i2])");
}

TEST(RmsNorm, PrintedForm) {
  const Small s;
  const Program program({s.X, s.W, s.v}, {rms_norm(s.Y, s.v, 1e-6, "rms")});
  EXPECT_EQ(tensor_names(program), (std::vector<std::string>{"X", "W", "Y", "rms_ms", "v", "rms"}));
  EXPECT_EQ(to_string(*program.find("rms_ms")),
            "rms_ms: f32[4] = compute(i0) (sum[j<3](pow(Y[i0, j], 2)) / 3.0)");
  EXPECT_EQ(to_string(*program.find("rms")),
            "rms: f32[4, 3] = compute(i0, i1) ((Y[i0, i1] * rsqrt((rms_ms[i0] + 9.999999974752427e-07))) * "
            "f32(v[i1]))");
}

TEST(Softmax, PrintedFormIsMaxExpSumDivide) {
  const auto Y = placeholder({4, 3}, DType::bf16, "Y");
  const Program program({Y}, {softmax(Y, "sm")});
  EXPECT_EQ(to_string(program),
            "Y: bf16[4, 3] input\n"
            "sm_max: f32[4] = compute(i0) max[j<3](f32(Y[i0, j]))\n"
            "sm_exp: f32[4, 3] = compute(i0, i1) exp((f32(Y[i0, i1]) - sm_max[i0]))\n"
            "sm_sum: f32[4] = compute(i0) sum[j<3](sm_exp[i0, j])\n"
            "sm: f32[4, 3] = compute(i0, i1) (sm_exp[i0, i1] / sm_sum[i0])\n"
            "outputs: sm\n");
}

TEST(Softmax, BatchedOverTheLastAxis) {
  const auto S = placeholder({2, 4, 5}, DType::f32, "S");
  const Program program({S}, {softmax(S, "P")});
  EXPECT_EQ(program.find("P_max")->shape(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(program.find("P_sum")->shape(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(program.find("P_exp")->shape(), (std::vector<std::int64_t>{2, 4, 5}));
  EXPECT_EQ(program.find("P")->shape(), (std::vector<std::int64_t>{2, 4, 5}));
  EXPECT_EQ(to_string(*program.find("P_max")), "P_max: f32[2, 4] = compute(i0, i1) max[j<5](S[i0, i1, j])");
}

TEST(CastTo, KeepsShapeAndTakesTheDtype) {
  const Small s;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
    const Tensor t = cast_to(s.Y, dtype, "o");
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.shape(), s.Y.shape());
  }
}

// Each chain of ops forms a valid program whose tensors appear in dependency order.
TEST(Chains, FormValidPrograms) {
  const Small s;
  const auto R = placeholder({4, 3}, DType::bf16, "R");
  const Tensor post_ln = layer_norm(residual_add(bias_add(s.Y, s.v, "yb"), R, "yr"), s.v, s.u, 1e-5, "ln");
  const Program p1({s.X, s.W, s.v, R, s.u}, {cast_to(relu(post_ln, "act"), DType::bf16, "out")});
  EXPECT_EQ(tensor_names(p1), (std::vector<std::string>{"X", "W", "Y", "v", "yb", "R", "yr", "ln_mean",
                                                        "ln_var", "u", "ln", "act", "out"}));

  const Tensor capped = tanh_softcap(scale(s.Y, 0.25, "ys"), 30.0, "cap");
  const Program p2({s.X, s.W}, {cast_to(softmax(gelu_erf(capped, "ge"), "sm"), DType::bf16, "out")});
  EXPECT_EQ(tensor_names(p2), (std::vector<std::string>{"X", "W", "Y", "ys", "cap", "ge", "sm_max", "sm_exp",
                                                        "sm_sum", "sm", "out"}));

  const auto Q = placeholder({2, 4, 8}, DType::bf16, "Q");
  const auto K = placeholder({2, 6, 8}, DType::bf16, "K");
  const auto V = placeholder({2, 6, 5}, DType::bf16, "V");
  const Tensor P = softmax(causal_mask(matmul(Q, K, BLayout::kColMajor, "S"), "Sm"), "P");
  const Tensor O = matmul(cast_to(P, DType::bf16, "Pb"), V, BLayout::kRowMajor, "O");
  const Program p3({Q, K, V}, {O});
  EXPECT_EQ(O.shape(), (std::vector<std::int64_t>{2, 4, 5}));
  EXPECT_EQ(tensor_names(p3),
            (std::vector<std::string>{"Q", "K", "S", "Sm", "P_max", "P_exp", "P_sum", "P", "Pb", "V", "O"}));
  EXPECT_EQ(to_string(*p3.find("Sm")),
            "Sm: f32[2, 4, 6] = compute(i0, i1, i2) select((i2 <= (i1 + 2)), S[i0, i1, i2], -inf)");
}

}  // namespace
}  // namespace comfuse::te
