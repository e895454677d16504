// Validating builders for expression nodes.
#include "te/expr.h"

#include <cmath>
#include <limits>
#include <set>

#include "support/error.h"
#include "te/printer.h"
#include "te/tensor.h"

namespace comfuse::te {
namespace {

std::string dtype_str(DType dtype) {
  return std::string(dtype_name(dtype));
}

// "an i32", "a bool": the dtype with the article it is read with.
std::string with_article(DType dtype) {
  const std::string name = dtype_str(dtype);
  return (name[0] == 'i' || name[0] == 'f' ? "an " : "a ") + name;
}

void require_same_dtype(std::string_view what, const Expr& a, const Expr& b) {
  if (!a.defined() || !b.defined())
    throw CompileError(std::string(what) + ": operand is an undefined expression");
  if (a.dtype() != b.dtype()) {
    throw CompileError(std::string("dtype mismatch in ") + std::string(what) + ": " + dtype_str(a.dtype()) +
                       " vs " + dtype_str(b.dtype()) + " (insert a cast)");
  }
}

void require_defined(std::string_view what, const Expr& e) {
  if (!e.defined()) throw CompileError(std::string(what) + ": operand is an undefined expression");
}

bool contains_reduce(const Expr& e) {
  return any_subexpr(e, [](const Expr& x) { return x.kind() == ExprKind::kReduce; });
}

}  // namespace

std::string_view binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "add";
    case BinaryOp::kSub:
      return "sub";
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kDiv:
      return "div";
    case BinaryOp::kMin:
      return "min";
    case BinaryOp::kMax:
      return "max";
  }
  return "?";
}

std::string_view compare_op_name(CompareOp op) {
  switch (op) {
    case CompareOp::kLt:
      return "lt";
    case CompareOp::kLe:
      return "le";
    case CompareOp::kGt:
      return "gt";
    case CompareOp::kGe:
      return "ge";
    case CompareOp::kEq:
      return "eq";
    case CompareOp::kNe:
      return "ne";
  }
  return "?";
}

std::string_view unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg:
      return "neg";
    case UnaryOp::kAbs:
      return "abs";
    case UnaryOp::kExp:
      return "exp";
    case UnaryOp::kLog:
      return "log";
    case UnaryOp::kTanh:
      return "tanh";
    case UnaryOp::kErf:
      return "erf";
    case UnaryOp::kSqrt:
      return "sqrt";
    case UnaryOp::kRsqrt:
      return "rsqrt";
    case UnaryOp::kSigmoid:
      return "sigmoid";
  }
  return "?";
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

Expr::Expr(int value) : node_(std::make_shared<IntImmNode>(DType::i32, value)) {}
Expr::Expr(double value) : node_(constant(DType::f32, value).node()) {}

ExprKind Expr::kind() const {
  COMFUSE_CHECK(node_ != nullptr, "kind() of an undefined expression");
  return node_->kind;
}

DType Expr::dtype() const {
  COMFUSE_CHECK(node_ != nullptr, "dtype() of an undefined expression");
  return node_->dtype;
}

Var::operator Expr() const {
  return Expr(node_);
}
const std::string& Var::name() const {
  return node_->name;
}
std::int64_t Var::extent() const {
  return node_->extent;
}
VarKind Var::var_kind() const {
  return node_->var_kind;
}

BinaryNode::BinaryNode(BinaryOp op, Expr a_in, Expr b_in)
    : ExprNode(kKind, a_in.dtype()), op(op), a(std::move(a_in)), b(std::move(b_in)) {}

SelectNode::SelectNode(Expr cond_in, Expr t, Expr f)
    : ExprNode(kKind, t.dtype()), cond(std::move(cond_in)), if_true(std::move(t)), if_false(std::move(f)) {}

UnaryNode::UnaryNode(UnaryOp op, Expr value_in)
    : ExprNode(kKind, value_in.dtype()), op(op), value(std::move(value_in)) {}

PowNode::PowNode(Expr base_in, int exponent)
    : ExprNode(kKind, base_in.dtype()), base(std::move(base_in)), exponent(exponent) {}

ReadNode::ReadNode(std::shared_ptr<const TensorNode> tensor_in, std::vector<Expr> indices_in)
    : ExprNode(kKind, tensor_in->dtype), tensor(std::move(tensor_in)), indices(std::move(indices_in)) {}

ReduceNode::ReduceNode(ReduceOp op, Expr body_in, std::vector<Var> axes_in)
    : ExprNode(kKind, body_in.dtype()), op(op), body(std::move(body_in)), axes(std::move(axes_in)) {}

Expr constant(DType dtype, double value) {
  switch (dtype) {
    case DType::i32:
      if (value != std::trunc(value) || value < -2147483648.0 || value > 2147483647.0) {
        throw CompileError("constant " + format_double(value) + " is not representable as i32");
      }
      return Expr(std::make_shared<IntImmNode>(DType::i32, static_cast<std::int64_t>(value)));
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      // One NaN for all: NaN payloads and signs mean nothing here, and equality and hash compare bits.
      if (std::isnan(value)) value = std::numeric_limits<double>::quiet_NaN();
      return Expr(std::make_shared<FloatImmNode>(dtype, round_to_dtype(value, dtype)));
    case DType::boolean:
      throw CompileError("constant " + format_double(value) + " of dtype bool: use a comparison instead");
  }
  throw InternalError("constant: unknown dtype");
}

Expr constant_like(const Expr& like, double value) {
  require_defined("constant", like);
  return constant(like.dtype(), value);
}

Var reduce_axis(std::int64_t extent, std::string name) {
  if (name.empty()) throw CompileError("reduce axis needs a name");
  if (extent <= 0) {
    throw CompileError("empty reduction: reduce axis '" + name + "' has extent " + std::to_string(extent));
  }
  return Var(std::make_shared<VarNode>(std::move(name), extent, VarKind::kReduce));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  require_same_dtype(binary_op_name(op), a, b);
  if (a.dtype() == DType::boolean) {
    throw CompileError(std::string(binary_op_name(op)) + " of bool operands: compare or select first");
  }
  return Expr(std::make_shared<BinaryNode>(op, std::move(a), std::move(b)));
}

Expr compare(CompareOp op, Expr a, Expr b) {
  require_same_dtype(compare_op_name(op), a, b);
  return Expr(std::make_shared<CompareNode>(op, std::move(a), std::move(b)));
}

Expr select(Expr cond, Expr if_true, Expr if_false) {
  require_defined("select", cond);
  if (cond.dtype() != DType::boolean) {
    throw CompileError("select condition has dtype " + dtype_str(cond.dtype()) +
                       ", expected bool (a comparison)");
  }
  require_same_dtype("select", if_true, if_false);
  return Expr(std::make_shared<SelectNode>(std::move(cond), std::move(if_true), std::move(if_false)));
}

Expr cast(DType dtype, Expr value) {
  require_defined("cast", value);
  if (dtype == DType::boolean) throw CompileError("cast to bool: use a comparison instead");
  return Expr(std::make_shared<CastNode>(dtype, std::move(value)));
}

Expr unary(UnaryOp op, Expr value) {
  require_defined(unary_op_name(op), value);
  const bool integer_ok = op == UnaryOp::kNeg || op == UnaryOp::kAbs;
  if (value.dtype() == DType::boolean || (!integer_ok && !is_float(value.dtype()))) {
    throw CompileError(std::string(unary_op_name(op)) + " of " + with_article(value.dtype()) +
                       " operand: expected " + (integer_ok ? "a numeric" : "a float") +
                       " dtype (insert a cast)");
  }
  return Expr(std::make_shared<UnaryNode>(op, std::move(value)));
}

Expr pow(Expr base, int exponent) {
  require_defined("pow", base);
  if (base.dtype() == DType::boolean) throw CompileError("pow of a bool operand");
  if (!is_float(base.dtype()) && exponent < 0) {
    throw CompileError("pow of an i32 operand with negative exponent " + std::to_string(exponent));
  }
  return Expr(std::make_shared<PowNode>(std::move(base), exponent));
}

Expr reduce(ReduceOp op, Expr body, std::vector<Var> axes) {
  const std::string what = std::string(reduce_op_name(op));
  require_defined(what, body);
  if (axes.empty()) throw CompileError("empty reduction: " + what + " over no reduce axes");
  std::set<const VarNode*> seen;
  for (const Var& axis : axes) {
    if (axis.get() == nullptr) throw CompileError(what + ": undefined reduce axis");
    if (axis.var_kind() != VarKind::kReduce) {
      throw CompileError(what + " over '" + axis.name() +
                         "', which is an iteration variable, not a reduce axis");
    }
    if (!seen.insert(axis.get()).second) {
      throw CompileError(what + " lists reduce axis '" + axis.name() + "' twice");
    }
  }
  if (contains_reduce(body))
    throw CompileError("nested reduction in " + what + ": split it into two computes");
  if (body.dtype() == DType::boolean) throw CompileError(what + " of bool values");
  return Expr(std::make_shared<ReduceNode>(op, std::move(body), std::move(axes)));
}

Expr operator-(Expr x) {
  return unary(UnaryOp::kNeg, std::move(x));
}
Expr operator+(Expr a, Expr b) {
  return binary(BinaryOp::kAdd, std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
  return binary(BinaryOp::kSub, std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
  return binary(BinaryOp::kMul, std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
  return binary(BinaryOp::kDiv, std::move(a), std::move(b));
}
Expr operator<(Expr a, Expr b) {
  return compare(CompareOp::kLt, std::move(a), std::move(b));
}
Expr operator<=(Expr a, Expr b) {
  return compare(CompareOp::kLe, std::move(a), std::move(b));
}
Expr operator>(Expr a, Expr b) {
  return compare(CompareOp::kGt, std::move(a), std::move(b));
}
Expr operator>=(Expr a, Expr b) {
  return compare(CompareOp::kGe, std::move(a), std::move(b));
}
Expr operator==(Expr a, Expr b) {
  return compare(CompareOp::kEq, std::move(a), std::move(b));
}
Expr operator!=(Expr a, Expr b) {
  return compare(CompareOp::kNe, std::move(a), std::move(b));
}

}  // namespace comfuse::te
