// Recognising a causal mask in a back-to-back plan.
#include "schedule/b2b_mask.h"

#include <algorithm>
#include <cmath>

#include "schedule/read_match.h"

namespace comfuse::schedule {
namespace {

// `e` as var + constant (either order, or the var alone); nullopt for anything else.
std::optional<std::int64_t> offset_of(const te::Expr& e, const te::VarNode* var) {
  if (is_var(e, var)) return 0;
  const auto* add = e.as<te::BinaryNode>();
  if (add == nullptr || (add->op != te::BinaryOp::kAdd && add->op != te::BinaryOp::kSub)) return std::nullopt;
  const auto* imm = add->b.as<te::IntImmNode>();
  if (imm != nullptr && is_var(add->a, var)) return add->op == te::BinaryOp::kAdd ? imm->value : -imm->value;
  const auto* left = add->a.as<te::IntImmNode>();
  if (left != nullptr && add->op == te::BinaryOp::kAdd && is_var(add->b, var)) return left->value;
  return std::nullopt;
}

// For cond over (row, col): the d with "cond holds exactly when col <= row + d", or nullopt.
std::optional<std::int64_t> diagonal_of(const te::CompareNode& cond, const te::VarNode* row,
                                        const te::VarNode* col) {
  // Normalise to "col OP row + c" with OP one of <=, <.
  te::Expr lhs = cond.a, rhs = cond.b;
  te::CompareOp op = cond.op;
  if (op == te::CompareOp::kGe || op == te::CompareOp::kGt) {
    std::swap(lhs, rhs);
    op = op == te::CompareOp::kGe ? te::CompareOp::kLe : te::CompareOp::kLt;
  }
  if (op != te::CompareOp::kLe && op != te::CompareOp::kLt) return std::nullopt;
  const std::optional<std::int64_t> col_offset = offset_of(lhs, col), row_offset = offset_of(rhs, row);
  if (!col_offset || !row_offset) return std::nullopt;
  const std::int64_t d = *row_offset - *col_offset;  // col + a OP row + b  <=>  col OP row + (b - a)
  return op == te::CompareOp::kLe ? d : d - 1;
}

}  // namespace

std::optional<std::int64_t> masked_above_diagonal(const B2BPlan& plan) {
  if (!plan.online() || !plan.numerator) return std::nullopt;
  const std::vector<const OnlineStatistic*> maxima = plan.running_maxima();
  if (maxima.size() != 1) return std::nullopt;
  const OnlineStatistic* max = maxima.front();
  for (const OnlineStatistic& s : plan.statistics) {
    if (&s != max && !s.source.same_as(*plan.numerator))
      return std::nullopt;  // a sum of something else might not vanish above the diagonal
  }
  if (!plan.shift || !plan.shift->same_as(max->tensor)) return std::nullopt;
  // The masked tile: select(cond, x, -inf) over [batch.., row, col].
  const te::Tensor& masked = max->source;
  if (masked.is_placeholder() || masked->axes.size() < 2) return std::nullopt;
  const std::size_t rank = masked->axes.size();
  const te::VarNode* row = masked->axes[rank - 2].get();
  const te::VarNode* col = masked->axes[rank - 1].get();
  const auto* select = masked->body.as<te::SelectNode>();
  if (select == nullptr) return std::nullopt;
  const auto* fill = select->if_false.as<te::FloatImmNode>();
  const auto* cond = select->cond.as<te::CompareNode>();
  if (fill == nullptr || !(std::isinf(fill->value) && fill->value < 0) || cond == nullptr)
    return std::nullopt;
  const std::optional<std::int64_t> d = diagonal_of(*cond, row, col);
  if (!d) return std::nullopt;
  // The numerator: exp(masked[..] - max[..]) at the numerator's own element.
  const te::Tensor& numerator = *plan.numerator;
  const auto* exp = numerator->body.as<te::UnaryNode>();
  if (exp == nullptr || exp->op != te::UnaryOp::kExp) return std::nullopt;
  const auto* sub = exp->value.as<te::BinaryNode>();
  if (sub == nullptr || sub->op != te::BinaryOp::kSub) return std::nullopt;
  const auto* x = sub->a.as<te::ReadNode>();
  const auto* m = sub->b.as<te::ReadNode>();
  if (x == nullptr || m == nullptr || x->tensor.get() != masked.get() || m->tensor.get() != max->tensor.get())
    return std::nullopt;
  std::vector<const te::VarNode*> axes;
  for (const te::Var& v : numerator->axes) axes.push_back(v.get());
  if (!indexed_by(*x, axes)) return std::nullopt;
  return d;
}

std::int64_t b2b_flops(const B2BPlan& plan) {
  std::int64_t batch = 1;
  for (std::int64_t b : plan.first.batch) batch *= b;
  std::int64_t pairs = plan.first.m * plan.first.n;
  if (const std::optional<std::int64_t> d = masked_above_diagonal(plan)) {
    pairs = 0;
    for (std::int64_t i = 0; i < plan.first.m; ++i)
      pairs += std::clamp<std::int64_t>(i + *d + 1, 0, plan.first.n);
  }
  // GEMM1 takes K multiply-adds a pair, GEMM2 O (its contraction runs over the chained axis).
  return 2 * batch * pairs * (plan.first.k + plan.second.n);
}

}  // namespace comfuse::schedule
