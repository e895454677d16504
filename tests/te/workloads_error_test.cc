// Bad workload names, shapes and shape text, and bad operands of the op library: each message asserted.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "support/error.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::te {
namespace {

// The message of the CompileError `fn` throws, or a note that it threw none.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CompileError& error) {
    return error.what();
  }
  return "<no CompileError>";
}

TEST(WorkloadErrors, UnknownWorkloadListsTheValidNames) {
  const std::string valid =
      "valid workloads: gemm, gemm_bias_relu, post_layernorm, post_rmsnorm, gemm_layernorm_relu, "
      "gemm_gelu_layernorm, gemm_softmax, gemm_softcap_softmax, mlp_relu, mlp_gelu, attention, "
      "target_attention";
  EXPECT_EQ(error_of([] { build_workload("post_ln"); }), "unknown workload 'post_ln'; " + valid);
  EXPECT_EQ(error_of([] { workload_info(""); }), "unknown workload ''; " + valid);
}

TEST(WorkloadErrors, UnknownParameterListsTheParameters) {
  EXPECT_EQ(error_of([] {
              build_workload("gemm", {{"O", 4}});
            }),
            "workload 'gemm' has no parameter 'O'; its parameters are M, K, N");
  EXPECT_EQ(error_of([] {
              build_workload("attention", {{"l", 4}});
            }),
            "workload 'attention' has no parameter 'l'; its parameters are BH, L, D, CAUSAL");
  EXPECT_EQ(error_of([] {
              format_shape(workload_info("mlp_relu"), {{"Q", 4}});
            }),
            "workload 'mlp_relu' has no parameter 'Q'; its parameters are M, K, N, O");
  EXPECT_EQ(error_of([] {
              instance_name(workload_info("target_attention"), {{"L", 4}});
            }),
            "workload 'target_attention' has no parameter 'L'; its parameters are BH, LQ, LK, D");
}

TEST(WorkloadErrors, NonPositiveValues) {
  EXPECT_EQ(error_of([] {
              build_workload("gemm", {{"K", 0}});
            }),
            "workload 'gemm': parameter 'K' must be positive, got 0 (parameters: M, K, N)");
  EXPECT_EQ(error_of([] { build_workload("post_rmsnorm", parse_shape("M=64,N=-8")); }),
            "workload 'post_rmsnorm': parameter 'N' must be positive, got -8 (parameters: M, K, N)");
  EXPECT_EQ(
      error_of([] {
        build_workload("target_attention", {{"LQ", 0}});
      }),
      "workload 'target_attention': parameter 'LQ' must be positive, got 0 (parameters: BH, LQ, LK, D)");
}

TEST(WorkloadErrors, FlagTakesZeroOrOne) {
  EXPECT_EQ(error_of([] {
              build_workload("attention", {{"CAUSAL", 2}});
            }),
            "workload 'attention': parameter 'CAUSAL' is a flag and must be 0 or 1, got 2 "
            "(parameters: BH, L, D, CAUSAL)");
  EXPECT_EQ(error_of([] {
              build_workload("attention", {{"CAUSAL", -1}});
            }),
            "workload 'attention': parameter 'CAUSAL' is a flag and must be 0 or 1, got -1 "
            "(parameters: BH, L, D, CAUSAL)");
}

TEST(WorkloadErrors, ExtentTooLargeForAnAxisNamesTheTensor) {
  EXPECT_EQ(error_of([] {
              build_workload("gemm", {{"M", std::int64_t{1} << 31}});
            }),
            "tensor 'X' has extent 2147483648 on axis 0 (shape [2147483648, 8192])");
}

TEST(ShapeTextErrors, MalformedItems) {
  EXPECT_EQ(error_of([] { parse_shape("M128"); }), "shape item 'M128' is not NAME=VALUE");
  EXPECT_EQ(error_of([] { parse_shape("M=128,K64"); }), "shape item 'K64' is not NAME=VALUE");
  EXPECT_EQ(error_of([] { parse_shape("M="); }), "shape item 'M=' has no value");
  EXPECT_EQ(error_of([] { parse_shape(" =5"); }), "shape item '=5' has no parameter name");
  EXPECT_EQ(error_of([] { parse_shape("M=abc"); }), "shape item 'M=abc': value 'abc' is not an integer");
  EXPECT_EQ(error_of([] { parse_shape("M=12x"); }), "shape item 'M=12x': value '12x' is not an integer");
  EXPECT_EQ(error_of([] { parse_shape("M=1 2"); }), "shape item 'M=1 2': value '1 2' is not an integer");
  EXPECT_EQ(error_of([] { parse_shape("M=+4"); }), "shape item 'M=+4': value '+4' is not an integer");
  EXPECT_EQ(error_of([] { parse_shape("M=99999999999999999999"); }),
            "shape item 'M=99999999999999999999': value '99999999999999999999' is out of range");
  EXPECT_EQ(error_of([] { parse_shape("2M=4"); }),
            "shape item '2M=4': parameter name '2M' is not an identifier");
}

TEST(ShapeTextErrors, EmptyAndRepeatedItems) {
  EXPECT_EQ(error_of([] { parse_shape("M=1,,N=2"); }), "empty shape item at position 2 in 'M=1,,N=2'");
  EXPECT_EQ(error_of([] { parse_shape("M=1,"); }), "empty shape item at position 2 in 'M=1,'");
  EXPECT_EQ(error_of([] { parse_shape(",M=1"); }), "empty shape item at position 1 in ',M=1'");
  EXPECT_EQ(error_of([] { parse_shape("M=1,M=2"); }), "shape item 'M=2' repeats parameter 'M'");
  EXPECT_EQ(error_of([] { parse_shape("M=1, K=3 ,M=1"); }), "shape item 'M=1' repeats parameter 'M'");
}

// Operands shared by the op error tests.
struct Operands {
  Tensor X = placeholder({16, 128}, DType::bf16, "X");
  Tensor W = placeholder({256, 64}, DType::bf16, "W");
  Tensor Y = placeholder({16, 256}, DType::f32, "Y");
  Tensor b = placeholder({255}, DType::bf16, "b");
  Tensor R = placeholder({256, 16}, DType::bf16, "R");
  Tensor v = placeholder({256}, DType::bf16, "v");
  Tensor idx = placeholder({16, 256}, DType::i32, "idx");
  Tensor row = placeholder({256}, DType::f32, "row");
};

TEST(OpErrors, MatmulShapes) {
  const Operands o;
  EXPECT_EQ(error_of([&] { matmul(o.X, o.W, BLayout::kColMajor, "Y"); }),
            "matmul 'Y': A 'X' has K=128 but B 'W' has K=64 (A [16, 128], B [256, 64] col-major [N, K])");
  EXPECT_EQ(error_of([&] { matmul(o.X, o.W, BLayout::kRowMajor, "Y"); }),
            "matmul 'Y': A 'X' has K=128 but B 'W' has K=256 (A [16, 128], B [256, 64] row-major [K, N])");
  EXPECT_EQ(error_of([&] { matmul(o.row, o.W, BLayout::kRowMajor, "Y"); }),
            "matmul 'Y': A 'row' has shape [256]; expected [M, K] or batched [Bt, M, K]");
  const auto A3 = placeholder({2, 16, 64}, DType::bf16, "A3");
  EXPECT_EQ(error_of([&] { matmul(A3, o.W, BLayout::kColMajor, "Y"); }),
            "matmul 'Y': A 'A3' has rank 3 but B 'W' has rank 2 (shape [256, 64])");
  const auto B3 = placeholder({4, 32, 64}, DType::bf16, "B3");
  EXPECT_EQ(error_of([&] { matmul(A3, B3, BLayout::kColMajor, "Y"); }),
            "matmul 'Y': A 'A3' has batch 2 but B 'B3' has batch 4");
}

TEST(OpErrors, MatmulOperands) {
  const Operands o;
  EXPECT_EQ(error_of([&] { matmul(o.idx, o.W, BLayout::kRowMajor, "Y"); }),
            "matmul 'Y': A 'idx' has dtype i32; expected f32, f16 or bf16 (insert a cast_to)");
  EXPECT_EQ(error_of([&] { matmul(Tensor(), o.W, BLayout::kRowMajor, "Y"); }),
            "matmul 'Y': A is an undefined tensor");
  EXPECT_EQ(error_of([&] { matmul(o.X, o.W, BLayout::kRowMajor, "my Y"); }),
            "matmul 'my Y': the result name is not an identifier (letters, digits, '_', not first a digit)");
}

TEST(OpErrors, BiasOfWrongLength) {
  const Operands o;
  EXPECT_EQ(error_of([&] { bias_add(o.Y, o.b, "yb"); }),
            "bias_add 'yb': bias 'b' has shape [255] but Y 'Y' has N=256 on its last axis; expected [256]");
  EXPECT_EQ(
      error_of([&] { bias_add(o.Y, o.Y, "yb"); }),
      "bias_add 'yb': bias 'Y' has shape [16, 256] but Y 'Y' has N=256 on its last axis; expected [256]");
  EXPECT_EQ(error_of([&] { bias_add(o.idx, o.v, "yb"); }),
            "bias_add 'yb': Y 'idx' has dtype i32; expected f32, f16 or bf16 (insert a cast_to)");
}

TEST(OpErrors, ResidualOfWrongShape) {
  const Operands o;
  EXPECT_EQ(error_of([&] { residual_add(o.Y, o.R, "yr"); }),
            "residual_add 'yr': residual 'R' has shape [256, 16] but Y 'Y' has shape [16, 256]");
  EXPECT_EQ(error_of([&] { residual_add(o.Y, Tensor(), "yr"); }),
            "residual_add 'yr': residual is an undefined tensor");
}

TEST(OpErrors, RowOpsNeedTwoAxes) {
  const Operands o;
  const std::string expected =
      "has shape [256]; expected [.., N] with at least 2 axes (give a vector shape [1, N])";
  EXPECT_EQ(error_of([&] { softmax(o.row, "sm"); }), "softmax 'sm': Y 'row' " + expected);
  EXPECT_EQ(error_of([&] { layer_norm(o.row, o.v, o.v, 1e-5, "ln"); }),
            "layer_norm 'ln': Y 'row' " + expected);
  EXPECT_EQ(error_of([&] { rms_norm(o.row, o.v, 1e-5, "rms"); }), "rms_norm 'rms': Y 'row' " + expected);
  EXPECT_EQ(error_of([&] { causal_mask(o.row, "m"); }),
            "causal_mask 'm': S 'row' has shape [256]; expected [.., Lq, Lk]");
}

TEST(OpErrors, NormParameters) {
  const Operands o;
  EXPECT_EQ(error_of([&] { layer_norm(o.Y, o.v, o.b, 1e-5, "ln"); }),
            "layer_norm 'ln': beta 'b' has shape [255] but Y 'Y' has N=256 on its last axis; expected [256]");
  EXPECT_EQ(error_of([&] { rms_norm(o.Y, o.b, 1e-5, "rms"); }),
            "rms_norm 'rms': gamma 'b' has shape [255] but Y 'Y' has N=256 on its last axis; expected [256]");
  EXPECT_EQ(error_of([&] { layer_norm(o.Y, o.v, o.v, -1e-5, "ln"); }),
            "layer_norm 'ln': eps is -1e-05; expected a finite non-negative value");
  EXPECT_EQ(error_of([&] { layer_norm(o.Y, o.idx, o.v, 1e-5, "ln"); }),
            "layer_norm 'ln': gamma 'idx' has dtype i32; expected f32, f16 or bf16 (insert a cast_to)");
}

TEST(OpErrors, Scalars) {
  const Operands o;
  EXPECT_EQ(error_of([&] { tanh_softcap(o.Y, 0.0, "cap"); }),
            "tanh_softcap 'cap': cap is 0.0; expected a finite positive value");
  EXPECT_EQ(error_of([&] { scale(o.Y, std::numeric_limits<double>::infinity(), "s"); }),
            "scale 's': factor is inf; expected a finite value");
}

TEST(OpErrors, CausalMaskWithMoreQueriesThanKeys) {
  const auto S = placeholder({2, 8, 6}, DType::f32, "S");
  EXPECT_EQ(
      error_of([&] { causal_mask(S, "m"); }),
      "causal_mask 'm': S 'S' has query length Lq=8 > key length Lk=6 (shape [2, 8, 6]): its first 2 rows "
      "would be fully masked");
}

TEST(OpErrors, CastToBool) {
  const Operands o;
  EXPECT_EQ(error_of([&] { cast_to(o.Y, DType::boolean, "c"); }),
            "cast_to 'c': cannot cast 'Y' to bool; use a compare and select");
}

TEST(OpErrors, ActivationsOfIntegerTensors) {
  const Operands o;
  for (const auto& [op, fn] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"relu", [&] { relu(o.idx, "a"); }},
           {"gelu_tanh", [&] { gelu_tanh(o.idx, "a"); }},
           {"gelu_erf", [&] { gelu_erf(o.idx, "a"); }},
           {"softmax", [&] { softmax(o.idx, "a"); }}}) {
    EXPECT_EQ(error_of(fn), op + " 'a': Y 'idx' has dtype i32; expected f32, f16 or bf16 (insert a cast_to)");
  }
}

TEST(OpErrors, IntermediateNameClashIsAProgramError) {
  const Operands o;
  const auto clash = placeholder({16}, DType::f32, "sm_max");
  const Tensor sm = softmax(o.Y, "sm");
  const Tensor both = compute(
      {16, 256}, [&](Var i, Var j) { return sm(i, j) + clash(i); }, "both");
  EXPECT_EQ(error_of([&] { Program({o.Y, clash}, {both}); }), "two distinct tensors are named 'sm_max'");
}

}  // namespace
}  // namespace comfuse::te
