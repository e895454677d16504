// TE expression to CUDA C expression.
#include "codegen/expr_emitter.h"

#include <cmath>
#include <cstdio>

#include "schedule/schedule.h"
#include "support/error.h"
#include "te/tensor.h"

namespace comfuse::codegen {
namespace {

using te::DType;
using te::ExprKind;

// `value` (a float-typed C expression) rounded to a 16-bit float dtype when the node has one; `packed`: by
// the packed conversion's helpers (ExprBindings::packed_rounding).
std::string round_to(DType dtype, const std::string& value, bool packed) {
  switch (dtype) {
    case DType::bf16:
      return (packed ? "round_bf16_packed(" : "round_bf16(") + value + ")";
    case DType::f16:
      return (packed ? "round_f16_packed(" : "round_f16(") + value + ")";
    case DType::f32:
    case DType::i32:
    case DType::boolean:
      return value;
  }
  return value;
}

std::string math_function(te::UnaryOp op) {
  switch (op) {
    case te::UnaryOp::kExp:
      return "expf";
    case te::UnaryOp::kLog:
      return "logf";
    case te::UnaryOp::kTanh:
      return "tanhf";
    case te::UnaryOp::kErf:
      return "erff";
    case te::UnaryOp::kSqrt:
      return "sqrtf";
    case te::UnaryOp::kRsqrt:
      return "rsqrtf";
    case te::UnaryOp::kSigmoid:
      return "sigmoid_f32";
    case te::UnaryOp::kAbs:
      return "fabsf";
    case te::UnaryOp::kNeg:
      return "-";
  }
  return "?";
}

class Emitter {
 public:
  explicit Emitter(const ExprBindings& bindings) : bindings_(bindings) {}

  // exp(x) as 2^(x·log2 e) on the hardware's ex2.approx; exp(a - b) (in f32) as one FFMA before it, with
  // b·log2 e computed where b is (once a row for a running max).
  std::string approximate_exp(const te::Expr& argument) {
    constexpr double kLog2e = 1.4426950408889634;
    const std::string log2e = float_literal(kLog2e);
    if (argument.kind() == ExprKind::kBinary && argument.dtype() == DType::f32) {
      const auto* sub = argument.as<te::BinaryNode>();
      if (sub->op == te::BinaryOp::kSub) {
        // A read bound as a scaled view takes its factor in the FFMA's constant:
        // exp(c·x - b) = 2^(x·(c·log2 e) - b·log2 e).
        const std::optional<ScaledValue> scaled =
            sub->a.kind() == ExprKind::kRead ? emit_scaled(sub->a, bindings_) : std::nullopt;
        const std::string a = scaled ? scaled->base : emit(sub->a);
        const std::string a_log2e = scaled ? float_literal(scaled->factor * kLog2e) : log2e;
        return "exp2_approx(fmaf(" + a + ", " + a_log2e + ", -(" + emit(sub->b) + ") * " + log2e + "))";
      }
    }
    return "exp2_approx(" + emit(argument) + " * " + log2e + ")";
  }

  std::string emit(const te::Expr& e) {
    const DType dtype = e.dtype();
    const bool integer = dtype == DType::i32;
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return "(" + std::to_string(e.as<te::IntImmNode>()->value) + ")";
      case ExprKind::kFloatImm:
        return float_literal(e.as<te::FloatImmNode>()->value);
      case ExprKind::kVar: {
        auto it = bindings_.vars.find(e.as<te::VarNode>());
        COMFUSE_CHECK(it != bindings_.vars.end(), "unbound variable '" + e.as<te::VarNode>()->name + "'");
        return it->second;
      }
      case ExprKind::kBinary: {
        const auto* n = e.as<te::BinaryNode>();
        const std::string a = emit(n->a), b = emit(n->b);
        std::string value;
        switch (n->op) {
          case te::BinaryOp::kAdd:
            value = "(" + a + " + " + b + ")";
            break;
          case te::BinaryOp::kSub:
            value = "(" + a + " - " + b + ")";
            break;
          case te::BinaryOp::kMul:
            value = "(" + a + " * " + b + ")";
            break;
          case te::BinaryOp::kDiv:
            if (bindings_.reciprocal_division && schedule::divides_by_constant(e)) {
              const double divisor = n->b.as<te::FloatImmNode>()->value;
              value = "(" + a + " * " + float_literal(1.0f / static_cast<float>(divisor)) + ")";
            } else if (bindings_.multiply_by_reciprocal && bindings_.multiply_by_reciprocal(e)) {
              value = "(" + a + " * (1.0f / " + b + "))";
            } else {
              value = "(" + a + " / " + b + ")";
            }
            break;
          case te::BinaryOp::kMin:
            value = (integer ? "min(" : "fminf(") + a + ", " + b + ")";
            break;
          case te::BinaryOp::kMax:
            value = (integer ? "max(" : "fmaxf(") + a + ", " + b + ")";
            break;
        }
        return rounded(dtype, value);
      }
      case ExprKind::kCompare: {
        const auto* n = e.as<te::CompareNode>();
        static const char* const kSymbols[] = {" < ", " <= ", " > ", " >= ", " == ", " != "};
        return "(" + emit(n->a) + kSymbols[static_cast<int>(n->op)] + emit(n->b) + ")";
      }
      case ExprKind::kSelect: {
        const auto* n = e.as<te::SelectNode>();
        return "(" + emit(n->cond) + " ? " + emit(n->if_true) + " : " + emit(n->if_false) + ")";
      }
      case ExprKind::kCast: {
        const auto* n = e.as<te::CastNode>();
        const DType from = n->value.dtype();
        const std::string value = emit(n->value);
        if (dtype == DType::i32) return "((int)" + value + ")";
        // To a float dtype: integers and bools convert exactly as C does, then round.
        const std::string as_float = te::is_float(from) ? value : "((float)" + value + ")";
        return from == dtype ? value : rounded(dtype, as_float);
      }
      case ExprKind::kUnary: {
        const auto* n = e.as<te::UnaryNode>();
        if (bindings_.approximate_math && n->op == te::UnaryOp::kExp)
          return rounded(dtype, approximate_exp(n->value));
        if (bindings_.approximate_math && n->op == te::UnaryOp::kTanh)
          return rounded(dtype, "tanh_approx(" + emit(n->value) + ")");
        const std::string value = emit(n->value);
        if (n->op == te::UnaryOp::kNeg) return "(-" + value + ")";
        if (integer && n->op == te::UnaryOp::kAbs) return "abs(" + value + ")";
        return rounded(dtype, math_function(n->op) + "(" + value + ")");
      }
      case ExprKind::kPow: {
        const auto* n = e.as<te::PowNode>();
        const std::string base = emit(n->base);
        if (integer) {
          std::string product = "1";
          for (int i = 0; i < n->exponent; ++i) product += " * " + base;
          return "(" + product + ")";
        }
        return rounded(dtype, "powi_f32(" + base + ", " + std::to_string(n->exponent) + ")");
      }
      case ExprKind::kRead: {
        const auto* n = e.as<te::ReadNode>();
        auto it = bindings_.reads.find(n->tensor.get());
        COMFUSE_CHECK(it != bindings_.reads.end(), "unbound read of '" + n->tensor->name + "'");
        return it->second;
      }
      case ExprKind::kReduce: {
        auto it = bindings_.reductions.find(e.as<te::ReduceNode>());
        COMFUSE_CHECK(it != bindings_.reductions.end(), "reduction emitted without its combined value");
        return it->second;
      }
    }
    throw InternalError("emit_expr: unknown node kind");
  }

 private:
  // `value` rounded to `dtype` (16-bit floats), by the helpers the bindings ask for.
  std::string rounded(DType dtype, const std::string& value) const {
    return round_to(dtype, value, bindings_.packed_rounding);
  }

  const ExprBindings& bindings_;
};

}  // namespace

void define_approximate_math(CodeStream& out, const std::string& exp_comment,
                             const std::optional<std::string>& tanh_comment) {
  out.line("// " + exp_comment);
  out.line(
      "__device__ __forceinline__ float exp2_approx(float x) { float y; "
      "asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y; }");
  if (!tanh_comment) return;
  out.line("// " + *tanh_comment);
  out.line(
      "__device__ __forceinline__ float tanh_approx(float x) { float y; "
      "asm(\"tanh.approx.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y; }");
}

std::string float_literal(double value) {
  const float f = static_cast<float>(value);
  if (std::isnan(f)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(f));
  std::string text(buffer);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return "(" + text + "f)";
}

std::string emit_expr(const te::Expr& e, const ExprBindings& bindings) {
  return Emitter(bindings).emit(e);
}

std::optional<ScaledValue> emit_scaled(const te::Expr& e, const ExprBindings& bindings) {
  if (e.dtype() != DType::f32) return std::nullopt;
  const auto positive_constant = [](const te::Expr& c) -> std::optional<double> {
    if (c.kind() != ExprKind::kFloatImm) return std::nullopt;
    const double value = c.as<te::FloatImmNode>()->value;
    const float f = static_cast<float>(value);
    if (!(f > 0.0f) || std::isinf(f)) return std::nullopt;
    return static_cast<double>(f);
  };
  switch (e.kind()) {
    case ExprKind::kRead: {
      const auto it = bindings.scaled_reads.find(e.as<te::ReadNode>()->tensor.get());
      if (it == bindings.scaled_reads.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::kBinary: {
      const auto* n = e.as<te::BinaryNode>();
      if (n->op != te::BinaryOp::kMul || n->a.dtype() != DType::f32 || n->b.dtype() != DType::f32)
        return std::nullopt;
      if (const auto c = positive_constant(n->b)) return ScaledValue{emit_expr(n->a, bindings), *c};
      if (const auto c = positive_constant(n->a)) return ScaledValue{emit_expr(n->b, bindings), *c};
      return std::nullopt;
    }
    case ExprKind::kSelect: {
      // select(cond, c·x, k) = c · select(cond, x, k) for k in {0, ±inf}.
      const auto* n = e.as<te::SelectNode>();
      const auto fixed = [](const te::Expr& k) {
        if (k.kind() != ExprKind::kFloatImm) return false;
        const float f = static_cast<float>(k.as<te::FloatImmNode>()->value);
        return f == 0.0f || std::isinf(f);
      };
      const std::string cond = emit_expr(n->cond, bindings);
      if (fixed(n->if_false)) {
        if (const auto v = emit_scaled(n->if_true, bindings))
          return ScaledValue{"(" + cond + " ? " + v->base + " : " + emit_expr(n->if_false, bindings) + ")",
                             v->factor};
      }
      if (fixed(n->if_true)) {
        if (const auto v = emit_scaled(n->if_false, bindings))
          return ScaledValue{"(" + cond + " ? " + emit_expr(n->if_true, bindings) + " : " + v->base + ")",
                             v->factor};
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

std::string memory_element_type(te::DType dtype) {
  switch (dtype) {
    case te::DType::bf16:
    case te::DType::f16:
      return "u16";
    case te::DType::f32:
      return "float";
    case te::DType::i32:
      return "int";
    case te::DType::boolean:
      break;
  }
  throw InternalError("no memory element type for dtype bool");
}

std::string store_value(te::DType dtype, const std::string& value) {
  if (dtype == te::DType::bf16) return "f32_to_bf16(" + value + ")";
  if (dtype == te::DType::f16) return "f32_to_f16(" + value + ")";
  return value;
}

std::string widen(te::DType dtype, const std::string& element) {
  if (dtype == te::DType::bf16) return "bf16_to_f32(" + element + ")";
  if (dtype == te::DType::f16) return "f16_to_f32(" + element + ")";
  return element;
}

}  // namespace comfuse::codegen
