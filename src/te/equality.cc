// Structural equality (variables matched by position) and a process-independent structural hash.
#include "te/equality.h"

#include <cstring>
#include <map>

namespace comfuse::te {
namespace {

class EqualityChecker {
 public:
  bool tensors(const TensorNode* a, const TensorNode* b) {
    if (a == b) return true;
    auto [it, fresh] = tensor_pairs_.emplace(a, b);
    if (!fresh) return it->second == b;
    if (a->name != b->name || a->shape != b->shape || a->dtype != b->dtype || a->kind != b->kind)
      return false;
    if (a->kind == TensorKind::kPlaceholder) return true;
    std::map<const VarNode*, const VarNode*> saved;
    saved.swap(vars_);
    for (std::size_t d = 0; d < a->axes.size(); ++d) {
      if (a->axes[d].name() != b->axes[d].name()) return false;
      vars_[a->axes[d].get()] = b->axes[d].get();
    }
    const bool equal = exprs(a->body, b->body);
    vars_.swap(saved);
    return equal;
  }

  bool exprs(const Expr& a, const Expr& b) {
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    switch (a.kind()) {
      case ExprKind::kIntImm:
        return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
      case ExprKind::kFloatImm: {
        const double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
        return std::memcmp(&x, &y, sizeof x) == 0;
      }
      case ExprKind::kVar: {
        auto it = vars_.find(a.as<VarNode>());
        return it != vars_.end() && it->second == b.as<VarNode>();
      }
      case ExprKind::kBinary: {
        const auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
        return x->op == y->op && exprs(x->a, y->a) && exprs(x->b, y->b);
      }
      case ExprKind::kCompare: {
        const auto *x = a.as<CompareNode>(), *y = b.as<CompareNode>();
        return x->op == y->op && exprs(x->a, y->a) && exprs(x->b, y->b);
      }
      case ExprKind::kSelect: {
        const auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
        return exprs(x->cond, y->cond) && exprs(x->if_true, y->if_true) && exprs(x->if_false, y->if_false);
      }
      case ExprKind::kCast:
        return exprs(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::kUnary: {
        const auto *x = a.as<UnaryNode>(), *y = b.as<UnaryNode>();
        return x->op == y->op && exprs(x->value, y->value);
      }
      case ExprKind::kPow: {
        const auto *x = a.as<PowNode>(), *y = b.as<PowNode>();
        return x->exponent == y->exponent && exprs(x->base, y->base);
      }
      case ExprKind::kRead: {
        const auto *x = a.as<ReadNode>(), *y = b.as<ReadNode>();
        if (x->indices.size() != y->indices.size() || !tensors(x->tensor.get(), y->tensor.get()))
          return false;
        for (std::size_t d = 0; d < x->indices.size(); ++d) {
          if (!exprs(x->indices[d], y->indices[d])) return false;
        }
        return true;
      }
      case ExprKind::kReduce: {
        const auto *x = a.as<ReduceNode>(), *y = b.as<ReduceNode>();
        if (x->op != y->op || x->axes.size() != y->axes.size()) return false;
        for (std::size_t i = 0; i < x->axes.size(); ++i) {
          if (x->axes[i].name() != y->axes[i].name() || x->axes[i].extent() != y->axes[i].extent())
            return false;
          vars_[x->axes[i].get()] = y->axes[i].get();
        }
        return exprs(x->body, y->body);
      }
    }
    return false;
  }

 private:
  std::map<const TensorNode*, const TensorNode*> tensor_pairs_;
  std::map<const VarNode*, const VarNode*> vars_;
};

// FNV-1a over a canonical byte stream of the structure; variables hash by their position.
class Hasher {
 public:
  void tensor(const TensorNode* t) {
    auto [it, fresh] = tensor_ids_.emplace(t, tensor_ids_.size());
    if (!fresh) {
      word(0x7e4);
      word(it->second);
      return;
    }
    text(t->name);
    word(static_cast<std::uint64_t>(t->dtype));
    word(static_cast<std::uint64_t>(t->kind));
    for (std::int64_t extent : t->shape) word(static_cast<std::uint64_t>(extent));
    if (t->kind == TensorKind::kPlaceholder) return;
    std::map<const VarNode*, std::uint64_t> saved;
    saved.swap(var_ids_);
    for (const Var& axis : t->axes) {
      text(axis.name());
      var_ids_.emplace(axis.get(), var_ids_.size());
    }
    expr(t->body);
    var_ids_.swap(saved);
  }

  void expr(const Expr& e) {
    word(static_cast<std::uint64_t>(e.kind()));
    word(static_cast<std::uint64_t>(e.dtype()));
    switch (e.kind()) {
      case ExprKind::kIntImm:
        word(static_cast<std::uint64_t>(e.as<IntImmNode>()->value));
        return;
      case ExprKind::kFloatImm: {
        std::uint64_t bits;
        const double value = e.as<FloatImmNode>()->value;
        std::memcpy(&bits, &value, sizeof bits);
        word(bits);
        return;
      }
      case ExprKind::kVar: {
        auto it = var_ids_.find(e.as<VarNode>());
        word(it == var_ids_.end() ? ~std::uint64_t{0} : it->second);
        return;
      }
      case ExprKind::kBinary:
        word(static_cast<std::uint64_t>(e.as<BinaryNode>()->op));
        break;
      case ExprKind::kCompare:
        word(static_cast<std::uint64_t>(e.as<CompareNode>()->op));
        break;
      case ExprKind::kUnary:
        word(static_cast<std::uint64_t>(e.as<UnaryNode>()->op));
        break;
      case ExprKind::kPow:
        word(static_cast<std::uint64_t>(e.as<PowNode>()->exponent));
        break;
      case ExprKind::kRead:
        tensor(e.as<ReadNode>()->tensor.get());
        break;
      case ExprKind::kReduce: {
        const auto* n = e.as<ReduceNode>();
        word(static_cast<std::uint64_t>(n->op));
        for (const Var& axis : n->axes) {
          text(axis.name());
          word(static_cast<std::uint64_t>(axis.extent()));
          var_ids_.emplace(axis.get(), var_ids_.size());
        }
        break;
      }
      case ExprKind::kSelect:
      case ExprKind::kCast:
        break;
    }
    for_each_child(e, [&](const Expr& child) { expr(child); });
  }

  void word(std::uint64_t value) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(value >> (8 * i)));
  }
  void text(const std::string& s) {
    word(s.size());
    for (char c : s) byte(static_cast<unsigned char>(c));
  }
  std::uint64_t value() const { return state_; }

 private:
  void byte(unsigned char b) {
    state_ ^= b;
    state_ *= 0x100000001b3ULL;
  }

  std::uint64_t state_ = 0xcbf29ce484222325ULL;
  std::map<const TensorNode*, std::uint64_t> tensor_ids_;
  std::map<const VarNode*, std::uint64_t> var_ids_;
};

}  // namespace

bool structural_equal(const Tensor& a, const Tensor& b) {
  return EqualityChecker().tensors(a.get(), b.get());
}

bool structural_equal(const Program& a, const Program& b) {
  if (a.inputs().size() != b.inputs().size() || a.outputs().size() != b.outputs().size()) return false;
  EqualityChecker checker;
  for (std::size_t i = 0; i < a.inputs().size(); ++i) {
    if (!checker.tensors(a.inputs()[i].get(), b.inputs()[i].get())) return false;
  }
  for (std::size_t i = 0; i < a.outputs().size(); ++i) {
    if (!checker.tensors(a.outputs()[i].get(), b.outputs()[i].get())) return false;
  }
  return true;
}

std::uint64_t structural_hash(const Tensor& t) {
  Hasher hasher;
  hasher.tensor(t.get());
  return hasher.value();
}

std::uint64_t structural_hash(const Program& program) {
  Hasher hasher;
  hasher.word(program.inputs().size());
  for (const Tensor& t : program.inputs()) hasher.tensor(t.get());
  hasher.word(program.outputs().size());
  for (const Tensor& t : program.outputs()) hasher.tensor(t.get());
  return hasher.value();
}

}  // namespace comfuse::te
