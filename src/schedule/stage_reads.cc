// What an expression reads, relative to the stages of a plan.
#include "schedule/stage_reads.h"

#include <algorithm>

#include "schedule/read_match.h"

namespace comfuse::schedule {

std::optional<te::Tensor> reduced_row_value(const FusionPlan& plan, const te::Expr& e, const te::VarNode* row,
                                            int stage) {
  const te::ReadNode* read = read_through_cast(e);
  if (read == nullptr || !indexed_by(*read, {row})) return std::nullopt;
  const te::Tensor value(read->tensor);
  const std::vector<te::Tensor>& reductions = plan.stages[stage].reductions;
  const bool reduced = std::any_of(reductions.begin(), reductions.end(),
                                   [&](const te::Tensor& t) { return t.same_as(value); });
  if (value.is_placeholder() || !reduced) return std::nullopt;
  return value;
}

bool reads_tiles_up_to(const FusionPlan& plan, const te::Expr& e, int stage) {
  std::vector<const te::ReadNode*> reads;
  collect_reads(e, reads);
  return !reads.empty() && std::all_of(reads.begin(), reads.end(), [&](const te::ReadNode* read) {
    const te::Tensor source(read->tensor);
    if (source.is_placeholder()) return false;
    const Role role = plan.role(source);
    return (role == Role::kTile || role == Role::kAnchor) && plan.stage(source) <= stage;
  });
}

}  // namespace comfuse::schedule
