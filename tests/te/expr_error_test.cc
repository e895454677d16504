// The exact CompileError messages of the expression builders.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>

#include "support/error.h"
#include "te/error_of.h"
#include "te/expr.h"
#include "te/tensor.h"

namespace comfuse::te {
namespace {

class ExprErrorTest : public ::testing::Test {
 protected:
  Tensor xb = placeholder({4, 8}, DType::bf16, "XB");
  Tensor xf = placeholder({4, 8}, DType::f32, "XF");
  Var i = Var(std::make_shared<VarNode>("i0", 4, VarKind::kAxis));
  Var k = reduce_axis(8, "k");
  Expr b = xb(i, k);  // bf16
  Expr f = xf(i, k);  // f32
};

TEST_F(ExprErrorTest, DtypeMismatchInEachBinaryOp) {
  EXPECT_EQ(error_of([&] { b + f; }), "dtype mismatch in add: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { f - b; }), "dtype mismatch in sub: f32 vs bf16 (insert a cast)");
  EXPECT_EQ(error_of([&] { b* f; }), "dtype mismatch in mul: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { b / f; }), "dtype mismatch in div: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { min(b, f); }), "dtype mismatch in min: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { max(f, i); }), "dtype mismatch in max: f32 vs i32 (insert a cast)");
}

TEST_F(ExprErrorTest, DtypeMismatchInEachComparison) {
  EXPECT_EQ(error_of([&] { b < f; }), "dtype mismatch in lt: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { b <= f; }), "dtype mismatch in le: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { b > f; }), "dtype mismatch in gt: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { b >= f; }), "dtype mismatch in ge: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { b == f; }), "dtype mismatch in eq: bf16 vs f32 (insert a cast)");
  EXPECT_EQ(error_of([&] { i != f; }), "dtype mismatch in ne: i32 vs f32 (insert a cast)");
}

TEST_F(ExprErrorTest, DtypeMismatchBetweenSelectBranches) {
  EXPECT_EQ(error_of([&] { select(f > 0.0, f, b); }),
            "dtype mismatch in select: f32 vs bf16 (insert a cast)");
}

TEST_F(ExprErrorTest, SelectConditionMustBeBool) {
  EXPECT_EQ(error_of([&] { select(f, f, f); }),
            "select condition has dtype f32, expected bool (a comparison)");
  EXPECT_EQ(error_of([&] { select(i, f, f); }),
            "select condition has dtype i32, expected bool (a comparison)");
}

TEST_F(ExprErrorTest, FloatMathOfAnI32) {
  EXPECT_EQ(error_of([&] { exp(i); }), "exp of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { log(i); }), "log of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { tanh(i); }), "tanh of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { erf(i); }), "erf of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { sqrt(i); }), "sqrt of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { rsqrt(i); }), "rsqrt of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { sigmoid(i); }),
            "sigmoid of an i32 operand: expected a float dtype (insert a cast)");
}

TEST_F(ExprErrorTest, MathOfABool) {
  EXPECT_EQ(error_of([&] { exp(f < 0.0); }), "exp of a bool operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { -(f < 0.0); }), "neg of a bool operand: expected a numeric dtype (insert a cast)");
  EXPECT_EQ(error_of([&] { abs(f < 0.0); }),
            "abs of a bool operand: expected a numeric dtype (insert a cast)");
}

TEST_F(ExprErrorTest, ArithmeticOfBools) {
  EXPECT_EQ(error_of([&] { (f < 0.0) + (f > 1.0); }), "add of bool operands: compare or select first");
  EXPECT_EQ(error_of([&] { max(f<0.0, f> 1.0); }), "max of bool operands: compare or select first");
}

TEST_F(ExprErrorTest, PowOfAnI32WithNegativeExponent) {
  EXPECT_EQ(error_of([&] { pow(i, -2); }), "pow of an i32 operand with negative exponent -2");
  EXPECT_EQ(error_of([&] { pow(i, 0); }), "<no error>");
  EXPECT_EQ(error_of([&] { pow(f, -2); }), "<no error>");
}

TEST_F(ExprErrorTest, PowOfABool) {
  EXPECT_EQ(error_of([&] { pow(f < 0.0, 2); }), "pow of a bool operand");
}

TEST_F(ExprErrorTest, CastToBool) {
  EXPECT_EQ(error_of([&] { cast(DType::boolean, f); }), "cast to bool: use a comparison instead");
}

TEST_F(ExprErrorTest, ConstantNotRepresentableAsI32) {
  EXPECT_EQ(error_of([&] { constant(DType::i32, 0.5); }), "constant 0.5 is not representable as i32");
  EXPECT_EQ(error_of([&] { i + 0.25; }), "constant 0.25 is not representable as i32");
  EXPECT_EQ(error_of([&] { i * 1e-7; }), "constant 1e-07 is not representable as i32");
  EXPECT_EQ(error_of([&] { constant(DType::i32, 2147483648.0); }),
            "constant 2147483648.0 is not representable as i32");
  EXPECT_EQ(error_of([&] { constant(DType::i32, -2147483649.0); }),
            "constant -2147483649.0 is not representable as i32");
  EXPECT_EQ(error_of([&] { constant(DType::i32, std::numeric_limits<double>::infinity()); }),
            "constant inf is not representable as i32");
  EXPECT_EQ(error_of([&] { constant(DType::i32, std::numeric_limits<double>::quiet_NaN()); }),
            "constant nan is not representable as i32");
}

TEST_F(ExprErrorTest, BoolConstant) {
  EXPECT_EQ(error_of([&] { constant(DType::boolean, 1.0); }),
            "constant 1.0 of dtype bool: use a comparison instead");
  EXPECT_EQ(error_of([&] { (f < 0.0) * 2; }), "constant 2.0 of dtype bool: use a comparison instead");
}

TEST_F(ExprErrorTest, EmptyReductionOverNoAxes) {
  EXPECT_EQ(error_of([&] { sum(f, {}); }), "empty reduction: sum over no reduce axes");
  EXPECT_EQ(error_of([&] { max_reduce(f, {}); }), "empty reduction: max over no reduce axes");
}

TEST_F(ExprErrorTest, EmptyReductionOverAnEmptyAxis) {
  EXPECT_EQ(error_of([&] { reduce_axis(0, "k"); }), "empty reduction: reduce axis 'k' has extent 0");
  EXPECT_EQ(error_of([&] { reduce_axis(-3, "r"); }), "empty reduction: reduce axis 'r' has extent -3");
}

TEST_F(ExprErrorTest, ReduceAxisNeedsAName) {
  EXPECT_EQ(error_of([&] { reduce_axis(4, ""); }), "reduce axis needs a name");
}

TEST_F(ExprErrorTest, ReduceOverAnIterationVariable) {
  EXPECT_EQ(error_of([&] { sum(f, {i}); }),
            "sum over 'i0', which is an iteration variable, not a reduce axis");
  EXPECT_EQ(error_of([&] {
              min_reduce(f, {k, i});
            }),
            "min over 'i0', which is an iteration variable, not a reduce axis");
}

TEST_F(ExprErrorTest, SameAxisListedTwice) {
  EXPECT_EQ(error_of([&] { max_reduce(f, {k, k}); }), "max lists reduce axis 'k' twice");
}

TEST_F(ExprErrorTest, NestedReduction) {
  Var l = reduce_axis(4, "l");
  EXPECT_EQ(error_of([&] { sum(sum(f, {k}) * xf(l, 0), {l}); }),
            "nested reduction in sum: split it into two computes");
  EXPECT_EQ(error_of([&] { max_reduce(exp(min_reduce(f, {k})), {l}); }),
            "nested reduction in max: split it into two computes");
}

TEST_F(ExprErrorTest, ReductionOfBools) {
  EXPECT_EQ(error_of([&] { sum(f < 0.0, {k}); }), "sum of bool values");
}

TEST_F(ExprErrorTest, UndefinedOperands) {
  EXPECT_EQ(error_of([&] { binary(BinaryOp::kAdd, Expr(), f); }), "add: operand is an undefined expression");
  EXPECT_EQ(error_of([&] { cast(DType::f32, Expr()); }), "cast: operand is an undefined expression");
  EXPECT_EQ(error_of([&] { exp(Expr()); }), "exp: operand is an undefined expression");
  EXPECT_EQ(error_of([&] { sum(Expr(), {k}); }), "sum: operand is an undefined expression");
}

}  // namespace
}  // namespace comfuse::te
