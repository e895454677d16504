// Child traversal over expression nodes, and a search below a node (inline part of expr.h).
#pragma once

namespace comfuse::te {

template <typename F>
void for_each_child(const Expr& e, F&& visit) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
    case ExprKind::kVar:
      return;
    case ExprKind::kBinary: {
      const auto* n = e.as<BinaryNode>();
      visit(n->a);
      visit(n->b);
      return;
    }
    case ExprKind::kCompare: {
      const auto* n = e.as<CompareNode>();
      visit(n->a);
      visit(n->b);
      return;
    }
    case ExprKind::kSelect: {
      const auto* n = e.as<SelectNode>();
      visit(n->cond);
      visit(n->if_true);
      visit(n->if_false);
      return;
    }
    case ExprKind::kCast:
      visit(e.as<CastNode>()->value);
      return;
    case ExprKind::kUnary:
      visit(e.as<UnaryNode>()->value);
      return;
    case ExprKind::kPow:
      visit(e.as<PowNode>()->base);
      return;
    case ExprKind::kRead:
      for (const Expr& index : e.as<ReadNode>()->indices) visit(index);
      return;
    case ExprKind::kReduce:
      visit(e.as<ReduceNode>()->body);
      return;
  }
}

template <typename Pred>
bool any_subexpr(const Expr& e, const Pred& pred) {
  if (pred(e)) return true;
  bool found = false;
  for_each_child(e, [&](const Expr& child) { found = found || any_subexpr(child, pred); });
  return found;
}

}  // namespace comfuse::te
