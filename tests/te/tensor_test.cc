// Placeholders and computes: their parts, the body-lambda forms, and the index checks that must not fire.
#include "te/tensor.h"

#include <gtest/gtest.h>

#include <vector>

namespace comfuse::te {
namespace {

TEST(Placeholder, KeepsNameShapeAndDtype) {
  Tensor x = placeholder({4, 8}, DType::bf16, "X");
  EXPECT_EQ(x.name(), "X");
  EXPECT_EQ(x.shape(), (std::vector<std::int64_t>{4, 8}));
  EXPECT_EQ(x.dtype(), DType::bf16);
  EXPECT_TRUE(x.is_placeholder());
  EXPECT_TRUE(x->axes.empty());
  EXPECT_FALSE(x->body.defined());
}

TEST(Placeholder, IdentityIsByHandle) {
  Tensor a = placeholder({4}, DType::f32, "A");
  Tensor b = placeholder({4}, DType::f32, "A");
  Tensor copy = a;
  EXPECT_TRUE(copy.same_as(a));
  EXPECT_FALSE(b.same_as(a));
}

TEST(Compute, AxesAreNamedByPositionAndSpanTheShape) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Tensor y = compute(
      {4, 8}, [&](Var i, Var j) { return x(i, j) * 2.0; }, "Y");
  EXPECT_FALSE(y.is_placeholder());
  EXPECT_EQ(y.dtype(), DType::f32);
  ASSERT_EQ(y->axes.size(), 2u);
  EXPECT_EQ(y->axes[0].name(), "i0");
  EXPECT_EQ(y->axes[1].name(), "i1");
  EXPECT_EQ(y->axes[0].extent(), 4);
  EXPECT_EQ(y->axes[1].extent(), 8);
  EXPECT_EQ(y->axes[0].var_kind(), VarKind::kAxis);
}

TEST(Compute, BodyUsesTheComputesOwnAxes) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Tensor y = compute(
      {4, 8}, [&](Var i, Var j) { return x(i, j); }, "Y");
  const auto* read = y->body.as<ReadNode>();
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->indices[0].get(), y->axes[0].get());
  EXPECT_EQ(read->indices[1].get(), y->axes[1].get());
}

TEST(Compute, DtypeIsTheBodysDtype) {
  Tensor x = placeholder({4, 8}, DType::bf16, "X");
  Tensor y = compute(
      {4, 8}, [&](Var i, Var j) { return cast(DType::f32, x(i, j)); }, "Y");
  EXPECT_EQ(y.dtype(), DType::f32);
  Tensor idx = compute(
      {4}, [&](Var i) { return i * 2; }, "Idx");
  EXPECT_EQ(idx.dtype(), DType::i32);
}

TEST(Compute, AcceptsOneToFourAxisLambdas) {
  Tensor x1 = compute(
      {2}, [](Var a) { return cast(DType::f32, a); }, "A1");
  Tensor x2 = compute(
      {2, 3}, [](Var a, Var b) { return cast(DType::f32, a + b); }, "A2");
  Tensor x3 = compute(
      {2, 3, 4}, [](Var a, Var b, Var c) { return cast(DType::f32, a + b + c); }, "A3");
  Tensor x4 = compute(
      {2, 3, 4, 5}, [](Var a, Var b, Var c, Var d) { return cast(DType::f32, a + b + c + d); }, "A4");
  EXPECT_EQ(x1->axes.size(), 1u);
  EXPECT_EQ(x2->axes.size(), 2u);
  EXPECT_EQ(x3->axes.size(), 3u);
  EXPECT_EQ(x4->axes.size(), 4u);
  EXPECT_EQ(x4->axes[3].name(), "i3");
  EXPECT_EQ(x4->axes[3].extent(), 5);
}

TEST(Compute, AcceptsAVectorLambdaForAnyRank) {
  Tensor x = placeholder({2, 3, 4, 5, 6}, DType::f32, "X");
  Tensor y = compute(
      {2, 3, 4, 5, 6}, [&](const std::vector<Var>& v) { return x(v[0], v[1], v[2], v[3], v[4]); }, "Y");
  EXPECT_EQ(y->axes.size(), 5u);
  EXPECT_EQ(y->axes[4].name(), "i4");
}

TEST(Compute, ReductionInsideTheBody) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Var k = reduce_axis(8, "k");
  Tensor y = compute(
      {4}, [&](Var i) { return sum(x(i, k), {k}) / 8.0; }, "Y");
  ASSERT_EQ(y->body.kind(), ExprKind::kBinary);
  EXPECT_EQ(y->body.as<BinaryNode>()->a.kind(), ExprKind::kReduce);
}

TEST(Compute, TwoReductionsOverDistinctAxes) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Var k = reduce_axis(8, "k"), l = reduce_axis(8, "l");
  Tensor y = compute(
      {4}, [&](Var i) { return sum(x(i, k), {k}) - max_reduce(x(i, l), {l}); }, "Y");
  EXPECT_EQ(y->body.as<BinaryNode>()->op, BinaryOp::kSub);
}

TEST(Compute, ReadsALowerRankTensorToBroadcast) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Tensor bias = placeholder({8}, DType::f32, "b");
  EXPECT_NO_THROW(compute(
      {4, 8}, [&](Var i, Var j) { return x(i, j) + bias(j); }, "Y"));
}

TEST(MakeCompute, BuildsFromParts) {
  Tensor x = placeholder({4}, DType::f32, "X");
  Var a(std::make_shared<VarNode>("i0", 4, VarKind::kAxis));
  Tensor y = make_compute({4}, {a}, exp(x(a)), "Y");
  EXPECT_EQ(y.name(), "Y");
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_TRUE(y->axes[0].same_as(a));
  EXPECT_EQ(y->body.kind(), ExprKind::kUnary);
}

TEST(IsIdentifier, AcceptsCIdentifiersOnly) {
  EXPECT_TRUE(is_identifier("X"));
  EXPECT_TRUE(is_identifier("_x1"));
  EXPECT_TRUE(is_identifier("layer_norm_out"));
  EXPECT_FALSE(is_identifier(""));
  EXPECT_FALSE(is_identifier("1x"));
  EXPECT_FALSE(is_identifier("a-b"));
  EXPECT_FALSE(is_identifier("a b"));
  EXPECT_FALSE(is_identifier("a.b"));
  EXPECT_FALSE(is_identifier("\xc3\xa9"));
}

// In-range affine indices and non-affine indices that may stay in range are accepted.
class InRangeIndex : public ::testing::Test {
 protected:
  static constexpr int kM = 4, kK = 8;
  Tensor x = placeholder({kM, kK}, DType::f32, "X");
  Var k = reduce_axis(kK, "k");

  template <typename F>
  void accepts(F&& body) {
    EXPECT_NO_THROW(compute({kM}, body, "Y"));
  }
};

TEST_F(InRangeIndex, ReversedAffineIndex) {
  accepts([&](Var i) { return x(kM - 1 - i, 0); });
}

TEST_F(InRangeIndex, SumOfVariablesThatFits) {
  Tensor y = placeholder({2}, DType::f32, "Y2");
  EXPECT_NO_THROW(compute(
      {2, 3}, [&](Var i, Var j) { return x(i + j, kK - 1) + y(i); }, "Z"));
}

TEST_F(InRangeIndex, ShiftedIndexOverASmallerCompute) {
  EXPECT_NO_THROW(compute(
      {kM - 1}, [&](Var i) { return x(i + 1, 0); }, "Y"));
}

TEST_F(InRangeIndex, ClampedShift) {
  accepts([&](Var i) { return x(min(i + 1, kM - 1), 0); });
  accepts([&](Var i) { return x(max(i - 1, 0), 0); });
}

TEST_F(InRangeIndex, DivisionAndSelect) {
  accepts([&](Var i) { return x(i / 2, 0) + sum(x(i, k * 1), {k}); });
  accepts([&](Var i) { return x(select(i > 0, i - 1, i), 0); });
}

TEST_F(InRangeIndex, CancellingTerms) {
  accepts([&](Var i) { return sum(x(i + k - k, k), {k}); });
}

// A gather: the index is a value read from a tensor, unknown at compile time.
TEST_F(InRangeIndex, DataDependentIndexIsNotProvablyOutside) {
  Tensor idx = placeholder({kM}, DType::i32, "Idx");
  accepts([&](Var i) { return x(idx(i), 0); });
  accepts([&](Var i) { return x(idx(i) * 8388608, 0); });  // 2^23 times the 2^40 bound: no wrap to INT64_MIN
  accepts([&](Var i) { return x(idx(i) * idx(i) * idx(i), 0); });
}

}  // namespace
}  // namespace comfuse::te
