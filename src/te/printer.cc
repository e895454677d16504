// Infix printing of the DSL.
#include "te/printer.h"

#include <charconv>
#include <cmath>

#include "te/program.h"

namespace comfuse::te {
namespace {

std::string infix_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return " + ";
    case BinaryOp::kSub:
      return " - ";
    case BinaryOp::kMul:
      return " * ";
    case BinaryOp::kDiv:
      return " / ";
    case BinaryOp::kMin:
    case BinaryOp::kMax:
      return "";
  }
  return "";
}

std::string compare_symbol(CompareOp op) {
  switch (op) {
    case CompareOp::kLt:
      return " < ";
    case CompareOp::kLe:
      return " <= ";
    case CompareOp::kGt:
      return " > ";
    case CompareOp::kGe:
      return " >= ";
    case CompareOp::kEq:
      return " == ";
    case CompareOp::kNe:
      return " != ";
  }
  return "";
}

}  // namespace

std::string shape_to_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::string type_to_string(DType dtype, const std::vector<std::int64_t>& shape) {
  return std::string(dtype_name(dtype)) + shape_to_string(shape);
}

std::string format_double(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string to_string(const Expr& e) {
  if (!e.defined()) return "<undefined>";
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return std::to_string(e.as<IntImmNode>()->value);
    case ExprKind::kFloatImm: {
      const std::string text = format_double(e.as<FloatImmNode>()->value);
      return e.dtype() == DType::f32 ? text : std::string(dtype_name(e.dtype())) + "(" + text + ")";
    }
    case ExprKind::kVar:
      return e.as<VarNode>()->name;
    case ExprKind::kBinary: {
      const auto* n = e.as<BinaryNode>();
      if (n->op == BinaryOp::kMin || n->op == BinaryOp::kMax) {
        return std::string(binary_op_name(n->op)) + "(" + to_string(n->a) + ", " + to_string(n->b) + ")";
      }
      return "(" + to_string(n->a) + infix_symbol(n->op) + to_string(n->b) + ")";
    }
    case ExprKind::kCompare: {
      const auto* n = e.as<CompareNode>();
      return "(" + to_string(n->a) + compare_symbol(n->op) + to_string(n->b) + ")";
    }
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      return "select(" + to_string(n->cond) + ", " + to_string(n->if_true) + ", " + to_string(n->if_false) +
             ")";
    }
    case ExprKind::kCast:
      return std::string(dtype_name(e.dtype())) + "(" + to_string(e.as<CastNode>()->value) + ")";
    case ExprKind::kUnary: {
      const auto* n = e.as<UnaryNode>();
      if (n->op == UnaryOp::kNeg) {
        // -(-1), not --1: a negated negative constant must not read as a decrement.
        const std::string operand = to_string(n->value);
        return operand[0] == '-' ? "-(" + operand + ")" : "-" + operand;
      }
      return std::string(unary_op_name(n->op)) + "(" + to_string(n->value) + ")";
    }
    case ExprKind::kPow: {
      const auto* n = e.as<PowNode>();
      return "pow(" + to_string(n->base) + ", " + std::to_string(n->exponent) + ")";
    }
    case ExprKind::kRead: {
      const auto* n = e.as<ReadNode>();
      std::string s = n->tensor->name + "[";
      for (std::size_t d = 0; d < n->indices.size(); ++d) s += (d ? ", " : "") + to_string(n->indices[d]);
      return s + "]";
    }
    case ExprKind::kReduce: {
      const auto* n = e.as<ReduceNode>();
      std::string s = std::string(reduce_op_name(n->op)) + "[";
      for (std::size_t a = 0; a < n->axes.size(); ++a) {
        s += (a ? ", " : "") + n->axes[a].name() + "<" + std::to_string(n->axes[a].extent());
      }
      return s + "](" + to_string(n->body) + ")";
    }
  }
  return "?";
}

std::string to_string(const Tensor& t) {
  std::string s = t.name() + ": " + type_to_string(t.dtype(), t.shape());
  if (t.is_placeholder()) return s + " input";
  s += " = compute(";
  for (std::size_t d = 0; d < t->axes.size(); ++d) s += (d ? ", " : "") + t->axes[d].name();
  return s + ") " + to_string(t->body);
}

std::string to_string(const Program& program) {
  std::string s;
  for (const Tensor& t : program.tensors()) s += to_string(t) + "\n";
  s += "outputs:";
  for (const Tensor& t : program.outputs()) s += " " + t.name();
  return s + "\n";
}

}  // namespace comfuse::te
