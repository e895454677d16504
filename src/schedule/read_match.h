// Small matchers over expression reads, shared by the planners.
#pragma once

#include <optional>
#include <vector>

#include "te/tensor.h"

namespace comfuse::schedule {

/// The read `e` is, looking through one cast; nullptr when it is none.
inline const te::ReadNode* read_through_cast(const te::Expr& e) {
  if (const auto* cast = e.as<te::CastNode>()) return cast->value.as<te::ReadNode>();
  return e.as<te::ReadNode>();
}

/// True when `e` is exactly the variable `var`.
inline bool is_var(const te::Expr& e, const te::VarNode* var) {
  return e.kind() == te::ExprKind::kVar && e.as<te::VarNode>() == var;
}

/// True when `read` indexes its tensor by exactly `vars`, in order.
inline bool indexed_by(const te::ReadNode& read, const std::vector<const te::VarNode*>& vars) {
  if (read.indices.size() != vars.size()) return false;
  for (std::size_t d = 0; d < vars.size(); ++d) {
    if (!is_var(read.indices[d], vars[d])) return false;
  }
  return true;
}

/// A compute of rank >= 2 whose body is sum_k f32(A[..]) * f32(B[..]) over one reduce axis (factors may be
/// cast): the shape every contraction has, before its indices are checked.
struct ProductSum {
  const te::ReduceNode* reduce;
  const te::BinaryNode* product;
  const te::ReadNode* a;
  const te::ReadNode* b;
};

/// `t` as a ProductSum, or nullopt when its body has another shape.
inline std::optional<ProductSum> match_product_sum(const te::Tensor& t) {
  if (t.is_placeholder() || t.shape().size() < 2) return std::nullopt;
  const auto* reduce = t->body.as<te::ReduceNode>();
  if (reduce == nullptr || reduce->op != te::ReduceOp::kSum || reduce->axes.size() != 1) return std::nullopt;
  const auto* mul = reduce->body.as<te::BinaryNode>();
  if (mul == nullptr || mul->op != te::BinaryOp::kMul) return std::nullopt;
  const te::ReadNode* a = read_through_cast(mul->a);
  const te::ReadNode* b = read_through_cast(mul->b);
  if (a == nullptr || b == nullptr) return std::nullopt;
  return ProductSum{reduce, mul, a, b};
}

/// Every reduce node in `e`, outermost first.
inline void collect_reduces(const te::Expr& e, std::vector<const te::ReduceNode*>& out) {
  if (const auto* reduce = e.as<te::ReduceNode>()) out.push_back(reduce);
  te::for_each_child(e, [&](const te::Expr& child) { collect_reduces(child, out); });
}

/// Every read in `e`.
inline void collect_reads(const te::Expr& e, std::vector<const te::ReadNode*>& out) {
  if (const auto* read = e.as<te::ReadNode>()) out.push_back(read);
  te::for_each_child(e, [&](const te::Expr& child) { collect_reads(child, out); });
}

}  // namespace comfuse::schedule
