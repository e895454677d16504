// Structural equality and hash: equal builds agree, every structural change is seen, variables match by
// position.
#include "te/equality.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace comfuse::te {
namespace {

// The parts of a small two-output program that the tests change one at a time.
struct Knobs {
  double scale = 0.5;
  DType x_dtype = DType::bf16;
  std::int64_t m = 4;
  std::string out_name = "Z";
  BinaryOp op = BinaryOp::kAdd;
  std::int64_t reduce_extent = 8;
  bool clamped_index = false;
  bool outputs_swapped = false;
  std::string reduce_name = "k";
  CompareOp compare = CompareOp::kGt;
  int exponent = 2;
  UnaryOp unary = UnaryOp::kExp;
};

// Y = X·W (f32 accumulation over a reduce axis), Z = select(Y > 0, op(Y, scale), exp(Y)^2).
Program build(const Knobs& c) {
  Tensor x = placeholder({c.m, 8}, c.x_dtype, "X");
  Tensor w = placeholder({8, 3}, DType::bf16, "W");
  Var k = reduce_axis(c.reduce_extent, c.reduce_name);
  Tensor y = compute(
      {c.m, 3}, [&](Var i, Var j) { return sum(cast(DType::f32, x(i, k)) * cast(DType::f32, w(k, j)), {k}); },
      "Y");
  Tensor z = compute(
      {c.m, 3},
      [&](Var i, Var j) {
        Expr row = c.clamped_index ? min(i + 1, static_cast<int>(c.m) - 1) : Expr(i);
        Expr v = y(row, j);
        return select(compare(c.compare, v, constant_like(v, 0.0)),
                      binary(c.op, v, constant_like(v, c.scale)), pow(unary(c.unary, v), c.exponent));
      },
      c.out_name);
  return c.outputs_swapped ? Program({x, w}, {z, y}) : Program({x, w}, {y, z});
}

void expect_equal(const Program& a, const Program& b) {
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_TRUE(structural_equal(b, a));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

void expect_unequal(const Program& a, const Program& b) {
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_FALSE(structural_equal(b, a));
  EXPECT_NE(structural_hash(a), structural_hash(b));
}

TEST(StructuralEquality, TwoBuildsAreEqualWithEqualHashes) {
  Program a = build({}), b = build({});
  EXPECT_FALSE(a.outputs()[0].same_as(b.outputs()[0]));  // distinct tensors and variables
  expect_equal(a, b);
}

TEST(StructuralEquality, AProgramEqualsItself) {
  Program a = build({});
  expect_equal(a, a);
}

TEST(StructuralEquality, ChangedConstant) {
  Knobs c;
  c.scale = 0.25;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, NegativeZeroIsAnotherConstant) {
  Knobs plus, minus;
  plus.scale = 0.0;
  minus.scale = -0.0;
  expect_unequal(build(plus), build(minus));
}

TEST(StructuralEquality, ChangedDtype) {
  Knobs c;
  c.x_dtype = DType::f16;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedShape) {
  Knobs c;
  c.m = 5;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedName) {
  Knobs c;
  c.out_name = "Z2";
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedBinaryOp) {
  Knobs c;
  c.op = BinaryOp::kSub;
  expect_unequal(build({}), build(c));
  c.op = BinaryOp::kMax;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedCompareOp) {
  Knobs c;
  c.compare = CompareOp::kGe;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedUnaryOpOrExponent) {
  Knobs c;
  c.unary = UnaryOp::kTanh;
  expect_unequal(build({}), build(c));
  Knobs e;
  e.exponent = 3;
  expect_unequal(build({}), build(e));
}

TEST(StructuralEquality, ChangedReduceExtent) {
  Knobs c;
  c.reduce_extent = 4;  // still in range of X and W, which keep extent 8
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedReduceAxisName) {
  Knobs c;
  c.reduce_name = "kk";
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedIndexExpression) {
  Knobs c;
  c.clamped_index = true;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedOutputOrder) {
  Knobs c;
  c.outputs_swapped = true;
  expect_unequal(build({}), build(c));
}

TEST(StructuralEquality, ChangedInputOrder) {
  Tensor x = placeholder({4}, DType::f32, "X"), w = placeholder({4}, DType::f32, "W");
  Tensor y = compute(
      {4}, [&](Var i) { return x(i) * w(i); }, "Y");
  expect_unequal(Program({x, w}, {y}), Program({w, x}, {y}));
}

TEST(StructuralEquality, ConstructionOrderDoesNotMatter) {
  const auto build_diamond = [](bool a_first) {
    Tensor x = placeholder({4}, DType::f32, "X");
    Tensor a, b;
    const auto make_a = [&] {
      a = compute(
          {4}, [&](Var i) { return exp(x(i)); }, "A");
    };
    const auto make_b = [&] {
      b = compute(
          {4}, [&](Var i) { return x(i) * 3.0; }, "B");
    };
    if (a_first) {
      make_a();
      make_b();
    } else {
      make_b();
      make_a();
    }
    Tensor c = compute(
        {4}, [&](Var i) { return a(i) + b(i); }, "C");
    return Program({x}, {c});
  };
  expect_equal(build_diamond(true), build_diamond(false));
}

// Iteration variables correspond by position: compute()'s axes equal hand-made ones with the same names.
TEST(StructuralEquality, AxesAreAlphaEquivalent) {
  Tensor x = placeholder({4, 4}, DType::f32, "X");
  Tensor by_lambda = compute(
      {4, 4}, [&](Var i, Var j) { return x(i, j) + 1.0; }, "Y");
  Var r(std::make_shared<VarNode>("i0", 4, VarKind::kAxis)),
      s(std::make_shared<VarNode>("i1", 4, VarKind::kAxis));
  Tensor by_parts = make_compute({4, 4}, {r, s}, x(r, s) + 1.0, "Y");
  EXPECT_TRUE(structural_equal(by_lambda, by_parts));
  EXPECT_EQ(structural_hash(by_lambda), structural_hash(by_parts));
}

TEST(StructuralEquality, SwappedAxesAreUnequal) {
  Tensor x = placeholder({4, 4}, DType::f32, "X");
  Tensor straight = compute(
      {4, 4}, [&](Var i, Var j) { return x(i, j); }, "Y");
  Tensor transposed = compute(
      {4, 4}, [&](Var i, Var j) { return x(j, i); }, "Y");
  EXPECT_FALSE(structural_equal(straight, transposed));
  EXPECT_NE(structural_hash(straight), structural_hash(transposed));
}

TEST(StructuralEquality, AxisNamesArePartOfTheStructure) {
  Tensor x = placeholder({4}, DType::f32, "X");
  Tensor by_lambda = compute(
      {4}, [&](Var i) { return x(i); }, "Y");
  Var r(std::make_shared<VarNode>("r", 4, VarKind::kAxis));
  Tensor renamed = make_compute({4}, {r}, x(r), "Y");
  EXPECT_FALSE(structural_equal(by_lambda, renamed));
  EXPECT_NE(structural_hash(by_lambda), structural_hash(renamed));
}

// Reduce axes correspond by their position in the reduction, whatever the order they were created in.
TEST(StructuralEquality, ReduceAxesAreAlphaEquivalent) {
  Tensor x = placeholder({4, 8, 2}, DType::f32, "X");
  const auto build_sum = [&](bool k_first) {
    Var k, l;
    if (k_first) {
      k = reduce_axis(8, "k");
      l = reduce_axis(2, "l");
    } else {
      l = reduce_axis(2, "l");
      k = reduce_axis(8, "k");
    }
    return compute(
        {4},
        [&](Var i) {
          return sum(x(i, k, l), {k, l});
        },
        "Y");
  };
  Tensor a = build_sum(true), b = build_sum(false);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StructuralEquality, ReduceAxesInAnotherOrderAreUnequal) {
  Tensor x = placeholder({4, 8, 8}, DType::f32, "X");
  Var k1 = reduce_axis(8, "k"), l1 = reduce_axis(8, "l");
  Var k2 = reduce_axis(8, "k"), l2 = reduce_axis(8, "l");
  Tensor a = compute(
      {4},
      [&](Var i) {
        return sum(x(i, k1, l1), {k1, l1});
      },
      "Y");
  Tensor b = compute(
      {4},
      [&](Var i) {
        return sum(x(i, l2, k2), {k2, l2});
      },
      "Y");  // reads the axes swapped
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_NE(structural_hash(a), structural_hash(b));
}

TEST(StructuralEquality, TensorsOfEqualProgramsAreEqual) {
  Program a = build({}), b = build({});
  for (std::size_t t = 0; t < a.tensors().size(); ++t) {
    EXPECT_TRUE(structural_equal(a.tensors()[t], b.tensors()[t])) << a.tensors()[t].name();
    EXPECT_EQ(structural_hash(a.tensors()[t]), structural_hash(b.tensors()[t]));
  }
  EXPECT_FALSE(structural_equal(a.tensors()[0], b.tensors()[1]));  // X vs W
}

TEST(StructuralEquality, PlaceholdersCompareByNameShapeAndDtype) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  EXPECT_TRUE(structural_equal(x, placeholder({4, 8}, DType::f32, "X")));
  EXPECT_FALSE(structural_equal(x, placeholder({4, 8}, DType::f32, "Y")));
  EXPECT_FALSE(structural_equal(x, placeholder({8, 4}, DType::f32, "X")));
  EXPECT_FALSE(structural_equal(x, placeholder({4, 8}, DType::f16, "X")));
  EXPECT_FALSE(structural_equal(x, placeholder({4, 8, 1}, DType::f32, "X")));
  EXPECT_NE(structural_hash(x), structural_hash(placeholder({8, 4}, DType::f32, "X")));
}

// Guards the hash function against accidental change: tuning logs and caches are keyed by it across processes
// and releases. If this value changes on purpose, every stored key changes with it.
TEST(StructuralHash, IsPinned) {
  EXPECT_EQ(structural_hash(build({})), 0xd9d331cca5b04a2cULL);
}

}  // namespace
}  // namespace comfuse::te
