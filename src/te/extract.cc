// Rebuilding the computes downstream of a cut.
#include "te/extract.h"

#include <map>
#include <set>

#include "support/error.h"
#include "te/expr_inl.h"

namespace comfuse::te {
namespace {

class Extractor {
 public:
  explicit Extractor(const std::map<const TensorNode*, Tensor>& cut) : rebuilt_(cut) {}

  Tensor tensor(const Tensor& t) {
    if (const auto it = rebuilt_.find(t.get()); it != rebuilt_.end()) return it->second;
    if (t.is_placeholder()) {
      used_inputs_.insert(t.get());
      return rebuilt_[t.get()] = t;
    }
    const Expr body = expr(t->body);
    const Tensor out = body.same_as(t->body) ? t : make_compute(t.shape(), t->axes, body, t.name());
    return rebuilt_[t.get()] = out;
  }

  bool uses(const Tensor& input) const { return used_inputs_.count(input.get()) > 0; }

 private:
  // `e` with reads of rebuilt tensors redirected; the same node when nothing under it changed.
  Expr expr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
      case ExprKind::kVar:
        return e;
      case ExprKind::kRead: {
        const auto* read = e.as<ReadNode>();
        const Tensor source(read->tensor);
        const Tensor target = tensor(source);
        std::vector<Expr> indices;
        bool same = target.same_as(source);
        for (const Expr& index : read->indices) {
          indices.push_back(expr(index));
          same = same && indices.back().same_as(index);
        }
        return same ? e : target.read(std::move(indices));
      }
      case ExprKind::kBinary: {
        const auto* n = e.as<BinaryNode>();
        Expr a = expr(n->a), b = expr(n->b);
        return a.same_as(n->a) && b.same_as(n->b) ? e : binary(n->op, a, b);
      }
      case ExprKind::kCompare: {
        const auto* n = e.as<CompareNode>();
        Expr a = expr(n->a), b = expr(n->b);
        return a.same_as(n->a) && b.same_as(n->b) ? e : compare(n->op, a, b);
      }
      case ExprKind::kSelect: {
        const auto* n = e.as<SelectNode>();
        Expr c = expr(n->cond), a = expr(n->if_true), b = expr(n->if_false);
        return c.same_as(n->cond) && a.same_as(n->if_true) && b.same_as(n->if_false) ? e : select(c, a, b);
      }
      case ExprKind::kCast: {
        const auto* n = e.as<CastNode>();
        Expr v = expr(n->value);
        return v.same_as(n->value) ? e : cast(n->dtype, v);
      }
      case ExprKind::kUnary: {
        const auto* n = e.as<UnaryNode>();
        Expr v = expr(n->value);
        return v.same_as(n->value) ? e : unary(n->op, v);
      }
      case ExprKind::kPow: {
        const auto* n = e.as<PowNode>();
        Expr base = expr(n->base);
        return base.same_as(n->base) ? e : pow(base, n->exponent);
      }
      case ExprKind::kReduce: {
        const auto* n = e.as<ReduceNode>();
        Expr body = expr(n->body);
        return body.same_as(n->body) ? e : reduce(n->op, body, n->axes);
      }
    }
    throw InternalError("extract: unknown expression kind");
  }

  std::map<const TensorNode*, Tensor> rebuilt_;
  std::set<const TensorNode*> used_inputs_;
};

}  // namespace

Program extract(const Program& program, const std::vector<Tensor>& cut, const std::vector<Tensor>& outputs) {
  auto require_member = [&](const Tensor& t, const char* role) {
    for (const Tensor& member : program.tensors()) {
      if (member.same_as(t)) return;
    }
    throw CompileError(std::string("extract: ") + role + " '" + t.name() + "' is not part of the program");
  };
  std::map<const TensorNode*, Tensor> replaced;
  std::vector<Tensor> inputs;
  for (const Tensor& t : cut) {
    require_member(t, "cut tensor");
    if (t.is_placeholder()) throw CompileError("extract: cut tensor '" + t.name() + "' is already an input");
    inputs.push_back(placeholder(t.shape(), t.dtype(), t.name()));
    replaced[t.get()] = inputs.back();
  }
  Extractor extractor(replaced);
  std::vector<Tensor> new_outputs;
  for (const Tensor& t : outputs) {
    require_member(t, "output");
    new_outputs.push_back(extractor.tensor(t));
  }
  for (const Tensor& input : program.inputs()) {
    if (extractor.uses(input)) inputs.push_back(input);
  }
  return Program(std::move(inputs), std::move(new_outputs));
}

}  // namespace comfuse::te
