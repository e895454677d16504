// Expression builders: node kinds, dtypes, how bare literals take their dtype, and child order.
#include "te/expr.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "te/tensor.h"

namespace comfuse::te {
namespace {

Var axis(const char* name, std::int64_t extent) {
  return Var(std::make_shared<VarNode>(name, extent, VarKind::kAxis));
}

// The children for_each_child visits, as node pointers, in visiting order.
std::vector<const ExprNode*> children(const Expr& e) {
  std::vector<const ExprNode*> out;
  for_each_child(e, [&](const Expr& child) { out.push_back(child.get()); });
  return out;
}

class ExprTest : public ::testing::Test {
 protected:
  Tensor xb = placeholder({4, 8}, DType::bf16, "XB");
  Tensor xf = placeholder({4, 8}, DType::f32, "XF");
  Tensor xh = placeholder({4, 8}, DType::f16, "XH");
  Var i = axis("i0", 4);
  Var j = axis("i1", 8);
  Expr b = xb(i, j);  // bf16
  Expr f = xf(i, j);  // f32
  Expr h = xh(i, j);  // f16
};

TEST_F(ExprTest, AnySubexprSearchesTheNodeAndEverythingBelowIt) {
  const Expr e = tanh(f * 2.0) + f;
  const auto is_tanh = [](const Expr& x) {
    return x.kind() == ExprKind::kUnary && x.as<UnaryNode>()->op == UnaryOp::kTanh;
  };
  EXPECT_TRUE(any_subexpr(e, is_tanh));  // two levels down
  EXPECT_FALSE(any_subexpr(f + f, is_tanh));
  EXPECT_TRUE(any_subexpr(e, [&](const Expr& x) { return x.same_as(e); }));  // the node itself
  int visited = 0;
  any_subexpr(f * 2.0, [&](const Expr&) {
    ++visited;
    return false;
  });
  EXPECT_EQ(visited, 5);  // the product, the read, its two index vars, the constant
}

TEST_F(ExprTest, IntLiteralIsAnI32Constant) {
  Expr e = 3;
  ASSERT_EQ(e.kind(), ExprKind::kIntImm);
  EXPECT_EQ(e.dtype(), DType::i32);
  EXPECT_EQ(e.as<IntImmNode>()->value, 3);
}

TEST_F(ExprTest, DoubleLiteralIsAnF32ConstantRoundedToF32) {
  Expr e = 0.1;
  ASSERT_EQ(e.kind(), ExprKind::kFloatImm);
  EXPECT_EQ(e.dtype(), DType::f32);
  EXPECT_EQ(e.as<FloatImmNode>()->value, static_cast<double>(0.1f));
}

TEST_F(ExprTest, ConstantIsRoundedToItsDtype) {
  EXPECT_EQ(constant(DType::bf16, 0.1).as<FloatImmNode>()->value, 0.10009765625);
  EXPECT_EQ(constant(DType::f16, 0.1).as<FloatImmNode>()->value, 0.0999755859375);
  EXPECT_EQ(constant(DType::f16, 1e6).as<FloatImmNode>()->value, std::numeric_limits<double>::infinity());
  Expr i32 = constant(DType::i32, 7.0);
  ASSERT_EQ(i32.kind(), ExprKind::kIntImm);
  EXPECT_EQ(i32.as<IntImmNode>()->value, 7);
}

TEST_F(ExprTest, I32ConstantCoversTheWholeRange) {
  EXPECT_EQ(constant(DType::i32, -2147483648.0).as<IntImmNode>()->value, -2147483648LL);
  EXPECT_EQ(constant(DType::i32, 2147483647.0).as<IntImmNode>()->value, 2147483647LL);
}

TEST_F(ExprTest, ConstantLikeTakesTheDtypeOfItsModel) {
  Expr c = constant_like(b, 0.5);
  EXPECT_EQ(c.kind(), ExprKind::kFloatImm);
  EXPECT_EQ(c.dtype(), DType::bf16);
  EXPECT_EQ(constant_like(i, 2).kind(), ExprKind::kIntImm);
}

TEST_F(ExprTest, FloatLiteralBesideBf16IsABf16Constant) {
  Expr e = b * 0.1;
  ASSERT_EQ(e.kind(), ExprKind::kBinary);
  EXPECT_EQ(e.dtype(), DType::bf16);
  const auto* n = e.as<BinaryNode>();
  EXPECT_EQ(n->op, BinaryOp::kMul);
  EXPECT_TRUE(n->a.same_as(b));
  ASSERT_EQ(n->b.kind(), ExprKind::kFloatImm);
  EXPECT_EQ(n->b.dtype(), DType::bf16);
  EXPECT_EQ(n->b.as<FloatImmNode>()->value, 0.10009765625);  // rounded to bf16, not to f32
}

TEST_F(ExprTest, LiteralOnTheLeftTakesTheRightOperandsDtype) {
  Expr e = 0.5 - h;
  ASSERT_EQ(e.kind(), ExprKind::kBinary);
  EXPECT_EQ(e.dtype(), DType::f16);
  const auto* n = e.as<BinaryNode>();
  EXPECT_EQ(n->op, BinaryOp::kSub);
  EXPECT_EQ(n->a.dtype(), DType::f16);
  EXPECT_EQ(n->a.as<FloatImmNode>()->value, 0.5);
  EXPECT_TRUE(n->b.same_as(h));
}

TEST_F(ExprTest, IntegerLiteralBesideFloatIsAFloatConstant) {
  Expr e = f / 2;
  EXPECT_EQ(e.dtype(), DType::f32);
  EXPECT_EQ(e.as<BinaryNode>()->b.kind(), ExprKind::kFloatImm);
  EXPECT_EQ(e.as<BinaryNode>()->b.as<FloatImmNode>()->value, 2.0);
}

TEST_F(ExprTest, IntegerLiteralBesideAVarStaysI32) {
  Expr e = i + 1;
  ASSERT_EQ(e.kind(), ExprKind::kBinary);
  EXPECT_EQ(e.dtype(), DType::i32);
  const auto* n = e.as<BinaryNode>();
  EXPECT_EQ(n->a.get(), i.get());
  ASSERT_EQ(n->b.kind(), ExprKind::kIntImm);
  EXPECT_EQ(n->b.as<IntImmNode>()->value, 1);
  Expr left = 3 * i;
  EXPECT_EQ(left.dtype(), DType::i32);
  EXPECT_EQ(left.as<BinaryNode>()->a.as<IntImmNode>()->value, 3);
}

TEST_F(ExprTest, ArithmeticOperatorsMakeTheirOps) {
  EXPECT_EQ((f + f).as<BinaryNode>()->op, BinaryOp::kAdd);
  EXPECT_EQ((f - f).as<BinaryNode>()->op, BinaryOp::kSub);
  EXPECT_EQ((f * f).as<BinaryNode>()->op, BinaryOp::kMul);
  EXPECT_EQ((f / f).as<BinaryNode>()->op, BinaryOp::kDiv);
  EXPECT_EQ(min(f, f).as<BinaryNode>()->op, BinaryOp::kMin);
  EXPECT_EQ(max(b, b).as<BinaryNode>()->op, BinaryOp::kMax);
  EXPECT_EQ(max(b, b).dtype(), DType::bf16);
  EXPECT_EQ(min(i, j).dtype(), DType::i32);
}

TEST_F(ExprTest, ComparisonsGiveBool) {
  const std::pair<Expr, CompareOp> cases[] = {
      {f < f, CompareOp::kLt},  {f <= f, CompareOp::kLe}, {f > f, CompareOp::kGt},
      {f >= f, CompareOp::kGe}, {f == f, CompareOp::kEq}, {f != f, CompareOp::kNe},
  };
  for (const auto& [e, op] : cases) {
    ASSERT_EQ(e.kind(), ExprKind::kCompare);
    EXPECT_EQ(e.dtype(), DType::boolean);
    EXPECT_EQ(e.as<CompareNode>()->op, op);
  }
  EXPECT_EQ((i < j).dtype(), DType::boolean);
}

TEST_F(ExprTest, ComparisonWithALiteralTakesTheOperandsDtype) {
  for (const Expr& e : {b<0.1, b <= 0.1, b> 0.1, b >= 0.1, b == 0.1, b != 0.1}) {
    EXPECT_EQ(e.dtype(), DType::boolean);
    const auto* n = e.as<CompareNode>();
    EXPECT_EQ(n->b.dtype(), DType::bf16);
    EXPECT_EQ(n->b.as<FloatImmNode>()->value, 0.10009765625);
  }
  Expr left = 0 == i;
  EXPECT_EQ(left.as<CompareNode>()->a.kind(), ExprKind::kIntImm);
  EXPECT_EQ((i != 3).as<CompareNode>()->op, CompareOp::kNe);
}

TEST_F(ExprTest, SelectHasTheDtypeOfItsBranches) {
  Expr e = select(f > 0.0, b, b * 0.5);
  ASSERT_EQ(e.kind(), ExprKind::kSelect);
  EXPECT_EQ(e.dtype(), DType::bf16);
  EXPECT_EQ(select(i < 2, i, j).dtype(), DType::i32);
}

TEST_F(ExprTest, CastChangesTheDtypeAndAcceptsBoolOperands) {
  Expr e = cast(DType::f32, b);
  ASSERT_EQ(e.kind(), ExprKind::kCast);
  EXPECT_EQ(e.dtype(), DType::f32);
  EXPECT_TRUE(e.as<CastNode>()->value.same_as(b));
  EXPECT_EQ(cast(DType::f32, f < 0.0).dtype(), DType::f32);
  EXPECT_EQ(cast(DType::i32, h).dtype(), DType::i32);
  EXPECT_EQ(cast(DType::bf16, i).dtype(), DType::bf16);
}

TEST_F(ExprTest, MathKeepsTheOperandsDtype) {
  const std::pair<Expr, UnaryOp> cases[] = {
      {-b, UnaryOp::kNeg},       {abs(b), UnaryOp::kAbs},     {exp(b), UnaryOp::kExp},
      {log(b), UnaryOp::kLog},   {tanh(b), UnaryOp::kTanh},   {erf(b), UnaryOp::kErf},
      {sqrt(b), UnaryOp::kSqrt}, {rsqrt(b), UnaryOp::kRsqrt}, {sigmoid(b), UnaryOp::kSigmoid},
  };
  for (const auto& [e, op] : cases) {
    ASSERT_EQ(e.kind(), ExprKind::kUnary);
    EXPECT_EQ(e.dtype(), DType::bf16);
    EXPECT_EQ(e.as<UnaryNode>()->op, op);
    EXPECT_TRUE(e.as<UnaryNode>()->value.same_as(b));
  }
}

TEST_F(ExprTest, NegAndAbsAcceptIntegers) {
  EXPECT_EQ((-Expr(i)).dtype(), DType::i32);
  EXPECT_EQ(abs(i - 2).dtype(), DType::i32);
}

TEST_F(ExprTest, PowKeepsTheExponentAndDtype) {
  Expr e = pow(h, -3);
  ASSERT_EQ(e.kind(), ExprKind::kPow);
  EXPECT_EQ(e.dtype(), DType::f16);
  EXPECT_EQ(e.as<PowNode>()->exponent, -3);
  EXPECT_EQ(pow(i, 2).dtype(), DType::i32);
  EXPECT_EQ(pow(i, 0).as<PowNode>()->exponent, 0);
}

TEST_F(ExprTest, ReadHasTheTensorsDtypeAndItsIndices) {
  ASSERT_EQ(b.kind(), ExprKind::kRead);
  EXPECT_EQ(b.dtype(), DType::bf16);
  const auto* n = b.as<ReadNode>();
  EXPECT_EQ(n->tensor.get(), xb.get());
  ASSERT_EQ(n->indices.size(), 2u);
  EXPECT_EQ(n->indices[0].get(), i.get());
  EXPECT_EQ(n->indices[1].get(), j.get());
  Expr constant_index = xf(0, 7);
  EXPECT_EQ(constant_index.as<ReadNode>()->indices[1].as<IntImmNode>()->value, 7);
}

TEST_F(ExprTest, ReduceAxisIsAReduceVar) {
  Var k = reduce_axis(16, "k");
  EXPECT_EQ(k.name(), "k");
  EXPECT_EQ(k.extent(), 16);
  EXPECT_EQ(k.var_kind(), VarKind::kReduce);
  EXPECT_EQ(Expr(k).kind(), ExprKind::kVar);
  EXPECT_EQ(Expr(k).dtype(), DType::i32);
  EXPECT_EQ(i.var_kind(), VarKind::kAxis);
}

TEST_F(ExprTest, ReductionsKeepTheBodyDtypeAndAxes) {
  Var k = reduce_axis(8, "k"), l = reduce_axis(4, "l");
  const std::pair<Expr, ReduceOp> cases[] = {
      {sum(xf(i, k), {k}), ReduceOp::kSum},
      {max_reduce(xf(i, k), {k}), ReduceOp::kMax},
      {min_reduce(xf(i, k), {k}), ReduceOp::kMin},
  };
  for (const auto& [e, op] : cases) {
    ASSERT_EQ(e.kind(), ExprKind::kReduce);
    EXPECT_EQ(e.dtype(), DType::f32);
    EXPECT_EQ(e.as<ReduceNode>()->op, op);
    ASSERT_EQ(e.as<ReduceNode>()->axes.size(), 1u);
    EXPECT_TRUE(e.as<ReduceNode>()->axes[0].same_as(k));
  }
  Expr two = sum(cast(DType::f32, xb(l, k)), {k, l});
  EXPECT_TRUE(two.as<ReduceNode>()->axes[0].same_as(k));
  EXPECT_TRUE(two.as<ReduceNode>()->axes[1].same_as(l));
  EXPECT_EQ(sum(xb(i, k), {k}).dtype(), DType::bf16);
}

TEST_F(ExprTest, AsReturnsNullForAnotherKind) {
  EXPECT_EQ(b.as<BinaryNode>(), nullptr);
  EXPECT_NE(b.as<ReadNode>(), nullptr);
  EXPECT_EQ(Expr(1).as<FloatImmNode>(), nullptr);
  EXPECT_EQ(Expr(1.0).as<IntImmNode>(), nullptr);
}

TEST_F(ExprTest, HandlesShareNodesAndDefaultIsUndefined) {
  Expr e = f + f;
  Expr copy = e;
  EXPECT_TRUE(copy.same_as(e));
  EXPECT_FALSE((f + f).same_as(e));  // identity is by handle, not structure
  EXPECT_FALSE(Expr().defined());
  EXPECT_TRUE(e.defined());
  Expr from_var = i;
  EXPECT_EQ(from_var.get(), i.get());
  EXPECT_FALSE(axis("i0", 4).same_as(i));  // same name and extent, another variable
}

TEST_F(ExprTest, ForEachChildVisitsInDocumentedOrder) {
  Expr t = b, u = b * 2.0;
  EXPECT_EQ(children(t + u), (std::vector<const ExprNode*>{t.get(), u.get()}));
  EXPECT_EQ(children(max(u, t)), (std::vector<const ExprNode*>{u.get(), t.get()}));
  Expr c = t < u;
  EXPECT_EQ(children(c), (std::vector<const ExprNode*>{t.get(), u.get()}));
  EXPECT_EQ(children(select(c, u, t)), (std::vector<const ExprNode*>{c.get(), u.get(), t.get()}));
  EXPECT_EQ(children(cast(DType::f32, u)), (std::vector<const ExprNode*>{u.get()}));
  EXPECT_EQ(children(exp(u)), (std::vector<const ExprNode*>{u.get()}));
  EXPECT_EQ(children(pow(u, 2)), (std::vector<const ExprNode*>{u.get()}));
  Expr i1 = i + 1;
  Expr read = xf(i1, j);
  EXPECT_EQ(children(read), (std::vector<const ExprNode*>{i1.get(), j.get()}));
  Var k = reduce_axis(8, "k");
  Expr body = xf(i, k);
  EXPECT_EQ(children(sum(body, {k})), (std::vector<const ExprNode*>{body.get()}));
}

TEST_F(ExprTest, LeavesHaveNoChildren) {
  EXPECT_TRUE(children(Expr(1)).empty());
  EXPECT_TRUE(children(Expr(1.5)).empty());
  EXPECT_TRUE(children(i).empty());
}

TEST(OpNames, EveryOpHasItsName) {
  EXPECT_EQ(binary_op_name(BinaryOp::kAdd), "add");
  EXPECT_EQ(binary_op_name(BinaryOp::kSub), "sub");
  EXPECT_EQ(binary_op_name(BinaryOp::kMul), "mul");
  EXPECT_EQ(binary_op_name(BinaryOp::kDiv), "div");
  EXPECT_EQ(binary_op_name(BinaryOp::kMin), "min");
  EXPECT_EQ(binary_op_name(BinaryOp::kMax), "max");
  EXPECT_EQ(compare_op_name(CompareOp::kLt), "lt");
  EXPECT_EQ(compare_op_name(CompareOp::kLe), "le");
  EXPECT_EQ(compare_op_name(CompareOp::kGt), "gt");
  EXPECT_EQ(compare_op_name(CompareOp::kGe), "ge");
  EXPECT_EQ(compare_op_name(CompareOp::kEq), "eq");
  EXPECT_EQ(compare_op_name(CompareOp::kNe), "ne");
  EXPECT_EQ(unary_op_name(UnaryOp::kNeg), "neg");
  EXPECT_EQ(unary_op_name(UnaryOp::kAbs), "abs");
  EXPECT_EQ(unary_op_name(UnaryOp::kExp), "exp");
  EXPECT_EQ(unary_op_name(UnaryOp::kLog), "log");
  EXPECT_EQ(unary_op_name(UnaryOp::kTanh), "tanh");
  EXPECT_EQ(unary_op_name(UnaryOp::kErf), "erf");
  EXPECT_EQ(unary_op_name(UnaryOp::kSqrt), "sqrt");
  EXPECT_EQ(unary_op_name(UnaryOp::kRsqrt), "rsqrt");
  EXPECT_EQ(unary_op_name(UnaryOp::kSigmoid), "sigmoid");
  EXPECT_EQ(reduce_op_name(ReduceOp::kSum), "sum");
  EXPECT_EQ(reduce_op_name(ReduceOp::kMax), "max");
  EXPECT_EQ(reduce_op_name(ReduceOp::kMin), "min");
}

}  // namespace
}  // namespace comfuse::te
