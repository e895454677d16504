// The exact CompileError messages of placeholders, computes and reads.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/error.h"
#include "te/error_of.h"
#include "te/tensor.h"

namespace comfuse::te {
namespace {

class TensorErrorTest : public ::testing::Test {
 protected:
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Var k = reduce_axis(8, "k");

  // The error of compute({4}, body, "Y").
  template <typename F>
  std::string error_of_y(F&& body) {
    return error_of([&] { compute({4}, body, "Y"); });
  }
};

TEST_F(TensorErrorTest, WrongNumberOfIndices) {
  Var i(std::make_shared<VarNode>("i0", 4, VarKind::kAxis));
  EXPECT_EQ(error_of([&] { x(i); }), "tensor 'X' has 2 axes but is read with 1 indices");
  EXPECT_EQ(error_of([&] { x(i, 0, 0); }), "tensor 'X' has 2 axes but is read with 3 indices");
  EXPECT_EQ(error_of_y([&](Var i) { return x(i); }),
            "compute 'Y': tensor 'X' has 2 axes but is read with 1 indices");
}

TEST_F(TensorErrorTest, IndexOfANonI32Dtype) {
  EXPECT_EQ(error_of_y([&](Var i) { return x(i, 0.5); }),
            "compute 'Y': tensor 'X' read with index 1 of dtype f32, expected i32");
  EXPECT_EQ(error_of_y([&](Var i) { return x(i < 2, 0); }),
            "compute 'Y': tensor 'X' read with index 0 of dtype bool, expected i32");
}

TEST_F(TensorErrorTest, UndefinedIndex) {
  EXPECT_EQ(error_of([&] { x(0, Expr()); }), "tensor 'X' read with an undefined index 1");
}

TEST_F(TensorErrorTest, ShiftedIndexOverTheFullExtent) {
  EXPECT_EQ(error_of_y([&](Var i) { return sum(x(i + 1, k), {k}); }),
            "compute 'Y': index 0 of X[(i0 + 1), k] ranges over [1, 4] but 'X' has extent 4 on axis 0");
  EXPECT_EQ(error_of_y([&](Var i) { return x(i - 1, 0); }),
            "compute 'Y': index 0 of X[(i0 - 1), 0] ranges over [-1, 2] but 'X' has extent 4 on axis 0");
}

TEST_F(TensorErrorTest, ConstantIndexAtTheExtent) {
  Tensor z = placeholder({4, 5}, DType::f32, "Z");
  EXPECT_EQ(error_of_y([&](Var i) { return z(i, 5); }),
            "compute 'Y': index 1 of Z[i0, 5] ranges over [5, 5] but 'Z' has extent 5 on axis 1");
  EXPECT_EQ(error_of_y([&](Var i) { return z(i, 4); }), "<no error>");
}

TEST_F(TensorErrorTest, NegativeConstantIndex) {
  EXPECT_EQ(error_of_y([&](Var) { return x(-1, 0); }),
            "compute 'Y': index 0 of X[-1, 0] ranges over [-1, -1] but 'X' has extent 4 on axis 0");
}

TEST_F(TensorErrorTest, StridedIndex) {
  EXPECT_EQ(error_of_y([&](Var i) { return sum(x(i * 2, k), {k}); }),
            "compute 'Y': index 0 of X[(i0 * 2), k] ranges over [0, 6] but 'X' has extent 4 on axis 0");
}

TEST_F(TensorErrorTest, ReduceAxisWiderThanTheReadAxis) {
  Var wide = reduce_axis(9, "kw");
  EXPECT_EQ(error_of_y([&](Var i) { return sum(x(i, wide), {wide}); }),
            "compute 'Y': index 1 of X[i0, kw] ranges over [0, 8] but 'X' has extent 8 on axis 1");
}

// Not affine, so the range is only a bound; it is an error only when every value lies outside.
TEST_F(TensorErrorTest, NonAffineIndexEntirelyOutside) {
  EXPECT_EQ(
      error_of_y([&](Var i) { return x(min(i, 3) + 10, 0); }),
      "compute 'Y': index 0 of X[(min(i0, 3) + 10), 0] ranges over [10, 13] but 'X' has extent 4 on axis 0");
}

TEST_F(TensorErrorTest, HugeAffineCoefficientIsStillExact) {
  EXPECT_EQ(error_of([&] {
              compute(
                  {2}, [&](Var i) { return x(i * 2147483647 * 2147483647, 0); }, "Y");
            }),
            "compute 'Y': index 0 of X[((i0 * 2147483647) * 2147483647), 0] ranges over [0, "
            "4611686014132420609] but "
            "'X' has extent 4 on axis 0");
}

TEST_F(TensorErrorTest, ReadOfAComputeIsCheckedToo) {
  Tensor a = compute(
      {4}, [&](Var i) { return x(i, 0); }, "A");
  EXPECT_EQ(error_of([&] {
              compute(
                  {4}, [&](Var i) { return a(i + 1); }, "B");
            }),
            "compute 'B': index 0 of A[(i0 + 1)] ranges over [1, 4] but 'A' has extent 4 on axis 0");
}

TEST_F(TensorErrorTest, ReduceAxisUsedOutsideItsReduction) {
  EXPECT_EQ(error_of_y([&](Var i) { return sum(x(i, k), {k}) + x(i, k); }),
            "compute 'Y': reduce axis 'k' used outside its reduction");
  EXPECT_EQ(error_of_y([&](Var i) { return x(i, k); }),
            "compute 'Y': reduce axis 'k' used outside its reduction");
}

TEST_F(TensorErrorTest, ReduceAxisReusedBySecondReduction) {
  EXPECT_EQ(error_of_y([&](Var i) { return sum(x(i, k), {k}) - max_reduce(x(i, k), {k}); }),
            "compute 'Y': reduce axis 'k' is reused by a second reduction");
}

TEST_F(TensorErrorTest, VariableOfAnotherCompute) {
  Var leaked;
  compute(
      {4},
      [&](Var i) {
        leaked = i;
        return x(i, 0);
      },
      "A");
  EXPECT_EQ(error_of([&] {
              compute(
                  {4}, [&](Var) { return x(leaked, 0); }, "B");
            }),
            "compute 'B': variable 'i0' is not an axis of this compute");
  Var stray(std::make_shared<VarNode>("j", 4, VarKind::kAxis));
  EXPECT_EQ(error_of_y([&](Var) { return x(stray, 0); }),
            "compute 'Y': variable 'j' is not an axis of this compute");
}

TEST_F(TensorErrorTest, ReduceOverAnIterationVariableInsideABody) {
  EXPECT_EQ(error_of([&] {
              compute(
                  {4, 8}, [&](Var i, Var j) { return sum(x(i, j), {j}); }, "Y");
            }),
            "compute 'Y': sum over 'i1', which is an iteration variable, not a reduce axis");
}

TEST_F(TensorErrorTest, EmptyReductionInsideABody) {
  EXPECT_EQ(error_of_y([&](Var i) {
              Var empty = reduce_axis(0, "r");
              return sum(x(i, empty), {empty});
            }),
            "compute 'Y': empty reduction: reduce axis 'r' has extent 0");
}

TEST_F(TensorErrorTest, BodyLambdaWithTheWrongNumberOfParameters) {
  EXPECT_EQ(error_of([&] {
              compute(
                  {4, 8}, [&](Var i) { return x(i, 0); }, "Y");
            }),
            "compute 'Y': the body function returned no expression (it must take one Var per axis, 2 here)");
  EXPECT_EQ(error_of([&] {
              compute(
                  {4}, [&](Var i, Var j) { return x(i, j); }, "Y");
            }),
            "compute 'Y': the body function returned no expression (it must take one Var per axis, 1 here)");
}

TEST_F(TensorErrorTest, BodyOfDtypeBool) {
  EXPECT_EQ(error_of([&] {
              compute(
                  {4, 8}, [&](Var i, Var j) { return x(i, j) > 0.0; }, "Y");
            }),
            "compute 'Y': body has dtype bool; select a numeric value instead");
}

TEST_F(TensorErrorTest, BuilderErrorsInsideABodyNameTheCompute) {
  Tensor h = placeholder({4, 8}, DType::bf16, "H");
  EXPECT_EQ(error_of_y([&](Var i) { return x(i, 0) + h(i, 0); }),
            "compute 'Y': dtype mismatch in add: f32 vs bf16 (insert a cast)");
  EXPECT_EQ(error_of_y([&](Var i) { return exp(i); }),
            "compute 'Y': exp of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_of_y([&](Var i) { return x(i, 0) + 0.5 * cast(DType::f32, i < 2); }), "<no error>");
}

TEST_F(TensorErrorTest, InvalidTensorNames) {
  const std::string rule = " is not an identifier (letters, digits, '_', not first a digit)";
  EXPECT_EQ(error_of([] { placeholder({4}, DType::f32, ""); }), "tensor name ''" + rule);
  EXPECT_EQ(error_of([] { placeholder({4}, DType::f32, "1x"); }), "tensor name '1x'" + rule);
  EXPECT_EQ(error_of([] { placeholder({4}, DType::f32, "a-b"); }), "tensor name 'a-b'" + rule);
  EXPECT_EQ(error_of([&] {
              compute(
                  {4}, [&](Var i) { return x(i, 0); }, "a-b");
            }),
            "tensor name 'a-b'" + rule);
}

TEST_F(TensorErrorTest, NonPositiveExtents) {
  EXPECT_EQ(error_of([] {
              placeholder({4, 0}, DType::f32, "X");
            }),
            "tensor 'X' has extent 0 on axis 1 (shape [4, 0])");
  EXPECT_EQ(error_of([] { placeholder({-2}, DType::f32, "X"); }),
            "tensor 'X' has extent -2 on axis 0 (shape [-2])");
  EXPECT_EQ(error_of([&] {
              compute(
                  {0}, [&](Var i) { return x(i, 0); }, "Y");
            }),
            "tensor 'Y' has extent 0 on axis 0 (shape [0])");
}

TEST_F(TensorErrorTest, ExtentBeyondI32) {
  EXPECT_EQ(error_of([] { placeholder({2147483648LL}, DType::f32, "X"); }),
            "tensor 'X' has extent 2147483648 on axis 0 (shape [2147483648])");
  EXPECT_EQ(error_of([] { placeholder({2147483647LL}, DType::f32, "X"); }), "<no error>");
}

TEST_F(TensorErrorTest, EmptyShape) {
  EXPECT_EQ(error_of([] { placeholder({}, DType::f32, "X"); }), "tensor 'X' has no axes: give it shape [1]");
  EXPECT_EQ(error_of([&] {
              compute(
                  {}, [&](const std::vector<Var>&) { return x(0, 0); }, "Y");
            }),
            "tensor 'Y' has no axes: give it shape [1]");
}

TEST_F(TensorErrorTest, BoolPlaceholder) {
  EXPECT_EQ(error_of([] { placeholder({4}, DType::boolean, "M"); }), "placeholder 'M' of dtype bool");
}

TEST_F(TensorErrorTest, MakeComputeChecksItsParts) {
  Var a(std::make_shared<VarNode>("i0", 4, VarKind::kAxis));
  EXPECT_EQ(error_of([&] { make_compute({4}, {a}, Expr(), "Y"); }), "compute 'Y': undefined body");
  EXPECT_EQ(error_of([&] {
              make_compute({4, 8}, {a}, x(a, 0), "Y");
            }),
            "compute 'Y': 1 axes for shape [4, 8]");
  EXPECT_EQ(error_of([&] { make_compute({3}, {a}, x(a, 0), "Y"); }),
            "compute 'Y': axis 0 'i0' does not range over extent 3");
  EXPECT_EQ(error_of([&] { make_compute({8}, {k}, x(0, k), "Y"); }),
            "compute 'Y': axis 0 'k' is a reduce axis, not an iteration variable");
  EXPECT_EQ(error_of([&] { make_compute({4}, {a}, x(a, 0) < 1.0, "Y"); }),
            "compute 'Y': body has dtype bool; select a numeric value instead");
  EXPECT_EQ(error_of([&] { make_compute({4}, {a}, x(a, 8), "Y"); }),
            "compute 'Y': index 1 of X[i0, 8] ranges over [8, 8] but 'X' has extent 8 on axis 1");
}

}  // namespace
}  // namespace comfuse::te
