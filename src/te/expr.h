// Immutable expression nodes of the tensor-expression DSL and the handles that share them.
//
// Nodes are built only through validating make functions and operators, never mutated, and shared through
// reference-counted handles. The kinds are listed once in ExprKind; every switch over them has no default,
// so -Wswitch points at each place a new kind must be handled.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "te/dtype.h"

namespace comfuse::te {

enum class ExprKind : std::uint8_t {
  kIntImm,    // integer constant
  kFloatImm,  // floating-point constant
  kVar,       // iteration variable of a compute, or reduce axis
  kBinary,    // + - * / min max
  kCompare,   // < <= > >= == !=, of type bool
  kSelect,    // cond ? a : b
  kCast,      // conversion to another dtype
  kUnary,     // neg and the math functions
  kPow,       // integer power
  kRead,      // element of a tensor
  kReduce,    // sum/max/min over reduce axes
};

enum class BinaryOp : std::uint8_t { kAdd, kSub, kMul, kDiv, kMin, kMax };
enum class CompareOp : std::uint8_t { kLt, kLe, kGt, kGe, kEq, kNe };
enum class UnaryOp : std::uint8_t { kNeg, kAbs, kExp, kLog, kTanh, kErf, kSqrt, kRsqrt, kSigmoid };
enum class ReduceOp : std::uint8_t { kSum, kMax, kMin };
enum class VarKind : std::uint8_t { kAxis, kReduce };

std::string_view binary_op_name(BinaryOp op);    // "add", "sub", ...
std::string_view compare_op_name(CompareOp op);  // "lt", "le", ...
std::string_view unary_op_name(UnaryOp op);      // "neg", "exp", ...
std::string_view reduce_op_name(ReduceOp op);    // "sum", "max", "min"

struct ExprNode;
struct VarNode;
struct TensorNode;

/// A shared handle to an immutable expression node. Default-constructed handles are null.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  /// An i32 constant.
  Expr(int value);  // NOLINT: integer literals are expressions
  /// An f32 constant.
  Expr(double value);  // NOLINT: float literals are expressions

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const;
  DType dtype() const;
  /// The node as `T`, or nullptr when it is of another kind.
  template <typename T>
  const T* as() const {
    return kind() == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const ExprNode>& node() const { return node_; }
  bool same_as(const Expr& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

/// An iteration variable (one per output axis of a compute) or a reduce axis. Identity is by handle:
/// two Vars with the same name are different variables.
class Var {
 public:
  Var() = default;
  explicit Var(std::shared_ptr<const VarNode> node) : node_(std::move(node)) {}
  operator Expr() const;  // NOLINT: a variable is an expression
  const VarNode* get() const { return node_.get(); }
  const VarNode* operator->() const { return node_.get(); }
  const std::string& name() const;
  std::int64_t extent() const;
  VarKind var_kind() const;
  bool same_as(const Var& other) const { return node_ == other.node_; }
  const std::shared_ptr<const VarNode>& node() const { return node_; }

 private:
  std::shared_ptr<const VarNode> node_;
};

struct ExprNode {
  ExprNode(ExprKind kind, DType dtype) : kind(kind), dtype(dtype) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DType dtype;
};

struct IntImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  IntImmNode(DType dtype, std::int64_t value) : ExprNode(kKind, dtype), value(value) {}
  const std::int64_t value;
};

struct FloatImmNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  FloatImmNode(DType dtype, double value) : ExprNode(kKind, dtype), value(value) {}
  const double value;  // already rounded to dtype
};

struct VarNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarNode(std::string name, std::int64_t extent, VarKind var_kind)
      : ExprNode(kKind, DType::i32), name(std::move(name)), extent(extent), var_kind(var_kind) {}
  const std::string name;
  const std::int64_t extent;  // the variable ranges over [0, extent)
  const VarKind var_kind;
};

struct BinaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBinary;
  BinaryNode(BinaryOp op, Expr a, Expr b);
  const BinaryOp op;
  const Expr a, b;
};

struct CompareNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCompare;
  CompareNode(CompareOp op, Expr a, Expr b)
      : ExprNode(kKind, DType::boolean), op(op), a(std::move(a)), b(std::move(b)) {}
  const CompareOp op;
  const Expr a, b;
};

struct SelectNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  SelectNode(Expr cond, Expr if_true, Expr if_false);
  const Expr cond, if_true, if_false;
};

struct CastNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  CastNode(DType dtype, Expr value) : ExprNode(kKind, dtype), value(std::move(value)) {}
  const Expr value;
};

struct UnaryNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kUnary;
  UnaryNode(UnaryOp op, Expr value);
  const UnaryOp op;
  const Expr value;
};

struct PowNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kPow;
  PowNode(Expr base, int exponent);
  const Expr base;
  const int exponent;
};

struct ReadNode : ExprNode {
  ReadNode(std::shared_ptr<const TensorNode> tensor, std::vector<Expr> indices);
  static constexpr ExprKind kKind = ExprKind::kRead;
  const std::shared_ptr<const TensorNode> tensor;
  const std::vector<Expr> indices;
};

struct ReduceNode : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kReduce;
  ReduceNode(ReduceOp op, Expr body, std::vector<Var> axes);
  const ReduceOp op;
  const Expr body;
  const std::vector<Var> axes;
};

// ---- Builders. Each validates its operands and throws CompileError naming the operation and dtypes. ----

/// A constant of `dtype` (rounded to it). Integer dtypes take integral values only.
Expr constant(DType dtype, double value);
/// A constant of the same dtype as `like`: how bare literals combine with expressions.
Expr constant_like(const Expr& like, double value);

/// A reduce axis over [0, extent). Extent must be positive.
Var reduce_axis(std::int64_t extent, std::string name);

Expr binary(BinaryOp op, Expr a, Expr b);
Expr compare(CompareOp op, Expr a, Expr b);
Expr select(Expr cond, Expr if_true, Expr if_false);
Expr cast(DType dtype, Expr value);
Expr unary(UnaryOp op, Expr value);
Expr pow(Expr base, int exponent);
Expr reduce(ReduceOp op, Expr body, std::vector<Var> axes);

inline Expr min(Expr a, Expr b) {
  return binary(BinaryOp::kMin, std::move(a), std::move(b));
}
inline Expr max(Expr a, Expr b) {
  return binary(BinaryOp::kMax, std::move(a), std::move(b));
}
inline Expr exp(Expr x) {
  return unary(UnaryOp::kExp, std::move(x));
}
inline Expr log(Expr x) {
  return unary(UnaryOp::kLog, std::move(x));
}
inline Expr tanh(Expr x) {
  return unary(UnaryOp::kTanh, std::move(x));
}
inline Expr erf(Expr x) {
  return unary(UnaryOp::kErf, std::move(x));
}
inline Expr sqrt(Expr x) {
  return unary(UnaryOp::kSqrt, std::move(x));
}
inline Expr rsqrt(Expr x) {
  return unary(UnaryOp::kRsqrt, std::move(x));
}
inline Expr sigmoid(Expr x) {
  return unary(UnaryOp::kSigmoid, std::move(x));
}
inline Expr abs(Expr x) {
  return unary(UnaryOp::kAbs, std::move(x));
}
inline Expr sum(Expr body, std::vector<Var> axes) {
  return reduce(ReduceOp::kSum, std::move(body), std::move(axes));
}
inline Expr max_reduce(Expr body, std::vector<Var> axes) {
  return reduce(ReduceOp::kMax, std::move(body), std::move(axes));
}
inline Expr min_reduce(Expr body, std::vector<Var> axes) {
  return reduce(ReduceOp::kMin, std::move(body), std::move(axes));
}

Expr operator-(Expr x);
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);

// A bare number beside an expression takes the expression's dtype: `x * 0.5` is f32 when x is f32,
// bf16 when x is bf16; `i + 1` stays i32.
template <typename T>
concept Number = std::is_arithmetic_v<T>;
#define COMFUSE_TE_LITERAL_OPERATOR(op)                  \
  template <Number T>                                    \
  Expr operator op(Expr a, T b) {                        \
    Expr rhs = constant_like(a, static_cast<double>(b)); \
    return std::move(a) op rhs;                          \
  }                                                      \
  template <Number T>                                    \
  Expr operator op(T a, Expr b) {                        \
    Expr lhs = constant_like(b, static_cast<double>(a)); \
    return lhs op std::move(b);                          \
  }
COMFUSE_TE_LITERAL_OPERATOR(+)
COMFUSE_TE_LITERAL_OPERATOR(-)
COMFUSE_TE_LITERAL_OPERATOR(*)
COMFUSE_TE_LITERAL_OPERATOR(/)
COMFUSE_TE_LITERAL_OPERATOR(<)
COMFUSE_TE_LITERAL_OPERATOR(<=)
COMFUSE_TE_LITERAL_OPERATOR(>)
COMFUSE_TE_LITERAL_OPERATOR(>=)
COMFUSE_TE_LITERAL_OPERATOR(==)
COMFUSE_TE_LITERAL_OPERATOR(!=)
#undef COMFUSE_TE_LITERAL_OPERATOR

/// Calls `visit(child)` for each direct child expression of `e`, in a fixed order.
template <typename F>
void for_each_child(const Expr& e, F&& visit);

/// Whether `pred` holds for `e` or any expression below it.
template <typename Pred>
bool any_subexpr(const Expr& e, const Pred& pred);

}  // namespace comfuse::te

#include "te/expr_inl.h"
