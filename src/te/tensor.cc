// Tensor construction and the validation of compute bodies.
#include "te/tensor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "support/error.h"
#include "te/printer.h"

namespace comfuse::te {
namespace {

void validate_tensor_header(const std::string& name, const std::vector<std::int64_t>& shape) {
  if (!is_identifier(name)) {
    throw CompileError("tensor name '" + name +
                       "' is not an identifier (letters, digits, '_', not first a digit)");
  }
  if (shape.empty()) throw CompileError("tensor '" + name + "' has no axes: give it shape [1]");
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 0 || shape[d] > (std::int64_t{1} << 31) - 1) {
      throw CompileError("tensor '" + name + "' has extent " + std::to_string(shape[d]) + " on axis " +
                         std::to_string(d) + " (shape " + shape_to_string(shape) + ")");
    }
  }
}

// The exact range of an index that is affine in distinct variables, else a conservative one.
struct Range {
  std::int64_t lo = 0, hi = 0;
  bool exact = true;
};

// An affine form sum(coeff * var) + offset, when the expression is one.
struct Affine {
  std::map<const VarNode*, std::int64_t> coeffs;
  std::int64_t offset = 0;
};

std::optional<Affine> as_affine(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return Affine{{}, e.as<IntImmNode>()->value};
    case ExprKind::kVar:
      return Affine{{{e.as<VarNode>(), 1}}, 0};
    case ExprKind::kBinary: {
      const auto* n = e.as<BinaryNode>();
      auto a = as_affine(n->a), b = as_affine(n->b);
      if (!a || !b) return std::nullopt;
      // A form whose coefficients overflow is dropped; the conservative range then bounds the index.
      if (n->op == BinaryOp::kAdd || n->op == BinaryOp::kSub) {
        const bool add = n->op == BinaryOp::kAdd;
        const auto combine = [add](std::int64_t x, std::int64_t y, std::int64_t* out) {
          return add ? __builtin_add_overflow(x, y, out) : __builtin_sub_overflow(x, y, out);
        };
        for (auto [var, c] : b->coeffs) {
          if (combine(a->coeffs[var], c, &a->coeffs[var])) return std::nullopt;
        }
        if (combine(a->offset, b->offset, &a->offset)) return std::nullopt;
        return a;
      }
      if (n->op == BinaryOp::kMul && (a->coeffs.empty() || b->coeffs.empty())) {
        const std::int64_t factor = a->coeffs.empty() ? a->offset : b->offset;
        Affine result = a->coeffs.empty() ? *b : *a;
        for (auto& [var, c] : result.coeffs) {
          if (__builtin_mul_overflow(c, factor, &c)) return std::nullopt;
        }
        if (__builtin_mul_overflow(result.offset, factor, &result.offset)) return std::nullopt;
        return result;
      }
      return std::nullopt;
    }
    case ExprKind::kFloatImm:
    case ExprKind::kCompare:
    case ExprKind::kSelect:
    case ExprKind::kCast:
    case ExprKind::kUnary:
    case ExprKind::kPow:
    case ExprKind::kRead:
    case ExprKind::kReduce:
      return std::nullopt;
  }
  return std::nullopt;
}

// Bounds of conservative ranges are clamped to +-kUnbounded (2^40) so that sums and products of bounds cannot
// overflow: a wrapped product would make an index such as `W(X(i) * 8388608)` look provably outside.
constexpr std::int64_t kUnbounded = std::int64_t{1} << 40;

Range clamped(std::int64_t lo, std::int64_t hi) {
  return {std::clamp(lo, -kUnbounded, kUnbounded), std::clamp(hi, -kUnbounded, kUnbounded), false};
}

Range conservative_range(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const auto v = e.as<IntImmNode>()->value;
      return {v, v, true};
    }
    case ExprKind::kVar:
      return {0, e.as<VarNode>()->extent - 1, true};
    case ExprKind::kBinary: {
      const auto* n = e.as<BinaryNode>();
      const Range a = conservative_range(n->a), b = conservative_range(n->b);
      switch (n->op) {
        case BinaryOp::kAdd:
          return clamped(a.lo + b.lo, a.hi + b.hi);
        case BinaryOp::kSub:
          return clamped(a.lo - b.hi, a.hi - b.lo);
        case BinaryOp::kMul: {
          // Products of two bounds of magnitude <= 2^40 may not fit: take them in long double.
          const long double alo = a.lo, ahi = a.hi;
          const long double p[] = {alo * b.lo, alo * b.hi, ahi * b.lo, ahi * b.hi};
          const long double lo = std::clamp(*std::min_element(p, p + 4), -0x1p40L, 0x1p40L);
          const long double hi = std::clamp(*std::max_element(p, p + 4), -0x1p40L, 0x1p40L);
          return clamped(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi));
        }
        case BinaryOp::kDiv:
          if (b.lo > 0) {
            const std::int64_t p[] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
            return clamped(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
          }
          break;
        case BinaryOp::kMin:
          return {std::min(a.lo, b.lo), std::min(a.hi, b.hi), false};
        case BinaryOp::kMax:
          return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), false};
      }
      break;
    }
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      const Range a = conservative_range(n->if_true), b = conservative_range(n->if_false);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), false};
    }
    case ExprKind::kFloatImm:
    case ExprKind::kCompare:
    case ExprKind::kCast:
    case ExprKind::kUnary:
    case ExprKind::kPow:
    case ExprKind::kRead:
    case ExprKind::kReduce:
      break;
  }
  return {-kUnbounded, kUnbounded, false};
}

Range index_range(const Expr& e) {
  if (auto affine = as_affine(e)) {
    // Terms may exceed 64 bits: they are summed in long double, lower bound and upper bound apart (no
    // cancellation), and clamped; only their position relative to [0, extent) matters.
    long double lo = static_cast<long double>(affine->offset), hi = lo;
    for (auto [var, c] : affine->coeffs) {
      const long double top = static_cast<long double>(c) * static_cast<long double>(var->extent - 1);
      lo += std::min<long double>(0, top);
      hi += std::max<long double>(0, top);
    }
    constexpr long double kMax = 0x1p62L;
    return {static_cast<std::int64_t>(std::clamp(lo, -kMax, kMax)),
            static_cast<std::int64_t>(std::clamp(hi, -kMax, kMax)), true};
  }
  return conservative_range(e);
}

// Walks a compute body checking variable scopes, reduce-axis use and index ranges.
class BodyChecker {
 public:
  BodyChecker(const std::string& tensor, const std::vector<Var>& axes) : tensor_(tensor) {
    for (const Var& axis : axes) bound_.insert(axis.get());
  }

  void check(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kVar: {
        const auto* var = e.as<VarNode>();
        if (bound_.count(var)) return;
        if (var->var_kind == VarKind::kReduce) {
          fail("reduce axis '" + var->name + "' used outside its reduction");
        }
        fail("variable '" + var->name + "' is not an axis of this compute");
      }
      case ExprKind::kReduce: {
        const auto* n = e.as<ReduceNode>();
        for (const Var& axis : n->axes) {
          if (!reduced_.insert(axis.get()).second) {
            fail("reduce axis '" + axis.name() + "' is reused by a second reduction");
          }
        }
        for (const Var& axis : n->axes) bound_.insert(axis.get());
        check(n->body);
        for (const Var& axis : n->axes) bound_.erase(axis.get());
        return;
      }
      case ExprKind::kRead:
        check_read(e);
        break;
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
      case ExprKind::kBinary:
      case ExprKind::kCompare:
      case ExprKind::kSelect:
      case ExprKind::kCast:
      case ExprKind::kUnary:
      case ExprKind::kPow:
        break;
    }
    for_each_child(e, [&](const Expr& child) { check(child); });
  }

 private:
  void check_read(const Expr& e) {
    const auto* read = e.as<ReadNode>();
    const auto& shape = read->tensor->shape;
    for (std::size_t d = 0; d < read->indices.size(); ++d) {
      const Range r = index_range(read->indices[d]);
      const bool all_outside = r.hi < 0 || r.lo >= shape[d];
      const bool provably_outside = r.exact && (r.lo < 0 || r.hi >= shape[d]);
      if (all_outside || provably_outside) {
        fail("index " + std::to_string(d) + " of " + to_string(e) + " ranges over [" + std::to_string(r.lo) +
             ", " + std::to_string(r.hi) + "] but '" + read->tensor->name + "' has extent " +
             std::to_string(shape[d]) + " on axis " + std::to_string(d));
      }
    }
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw CompileError("compute '" + tensor_ + "': " + message);
  }

  const std::string& tensor_;
  std::set<const VarNode*> bound_;
  std::set<const VarNode*> reduced_;
};

}  // namespace

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

Expr Tensor::read(std::vector<Expr> indices) const {
  COMFUSE_CHECK(node_ != nullptr, "read of an undefined tensor");
  if (indices.size() != node_->shape.size()) {
    throw CompileError("tensor '" + node_->name + "' has " + std::to_string(node_->shape.size()) +
                       " axes but is read with " + std::to_string(indices.size()) + " indices");
  }
  for (std::size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined()) {
      throw CompileError("tensor '" + node_->name + "' read with an undefined index " + std::to_string(d));
    }
    if (indices[d].dtype() != DType::i32) {
      throw CompileError("tensor '" + node_->name + "' read with index " + std::to_string(d) + " of dtype " +
                         std::string(dtype_name(indices[d].dtype())) + ", expected i32");
    }
  }
  return Expr(std::make_shared<ReadNode>(node_, std::move(indices)));
}

Tensor placeholder(std::vector<std::int64_t> shape, DType dtype, std::string name) {
  validate_tensor_header(name, shape);
  if (dtype == DType::boolean) throw CompileError("placeholder '" + name + "' of dtype bool");
  auto node = std::make_shared<TensorNode>();
  node->name = std::move(name);
  node->shape = std::move(shape);
  node->dtype = dtype;
  node->kind = TensorKind::kPlaceholder;
  return Tensor(std::move(node));
}

Tensor compute(std::vector<std::int64_t> shape, const std::function<Expr(const std::vector<Var>&)>& fcompute,
               std::string name) {
  validate_tensor_header(name, shape);
  std::vector<Var> axes;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    axes.emplace_back(std::make_shared<VarNode>("i" + std::to_string(d), shape[d], VarKind::kAxis));
  }
  Expr body;
  try {
    body = fcompute(axes);
  } catch (const CompileError& error) {
    throw CompileError("compute '" + name + "': " + error.what());
  }
  if (!body.defined()) {
    throw CompileError("compute '" + name +
                       "': the body function returned no expression (it must take one Var per "
                       "axis, " +
                       std::to_string(shape.size()) + " here)");
  }
  return make_compute(std::move(shape), std::move(axes), std::move(body), std::move(name));
}

Tensor make_compute(std::vector<std::int64_t> shape, std::vector<Var> axes, Expr body, std::string name) {
  validate_tensor_header(name, shape);
  if (!body.defined()) throw CompileError("compute '" + name + "': undefined body");
  if (body.dtype() == DType::boolean) {
    throw CompileError("compute '" + name + "': body has dtype bool; select a numeric value instead");
  }
  if (axes.size() != shape.size()) {
    throw CompileError("compute '" + name + "': " + std::to_string(axes.size()) + " axes for shape " +
                       shape_to_string(shape));
  }
  for (std::size_t d = 0; d < axes.size(); ++d) {
    if (axes[d].get() == nullptr) {
      throw CompileError("compute '" + name + "': axis " + std::to_string(d) + " is undefined");
    }
    if (axes[d].var_kind() != VarKind::kAxis) {
      throw CompileError("compute '" + name + "': axis " + std::to_string(d) + " '" + axes[d].name() +
                         "' is a reduce axis, not an iteration variable");
    }
    if (axes[d].extent() != shape[d]) {
      throw CompileError("compute '" + name + "': axis " + std::to_string(d) + " '" + axes[d].name() +
                         "' does not range over extent " + std::to_string(shape[d]));
    }
  }
  BodyChecker(name, axes).check(body);
  auto node = std::make_shared<TensorNode>();
  node->name = std::move(name);
  node->shape = std::move(shape);
  node->dtype = body.dtype();
  node->kind = TensorKind::kCompute;
  node->axes = std::move(axes);
  node->body = std::move(body);
  return Tensor(std::move(node));
}

}  // namespace comfuse::te
