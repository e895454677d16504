// Small matchers over expression reads, shared by the planners.
#pragma once

#include <vector>

#include "te/expr.h"

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

}  // namespace comfuse::schedule
