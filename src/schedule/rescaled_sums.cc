// Online softmax: finding sums of exponentials about a row value and merging them into its stage.
#include "schedule/rescaled_sums.h"

#include <algorithm>
#include <optional>

#include "schedule/read_match.h"
#include "schedule/stage_reads.h"

namespace comfuse::schedule {
namespace {

using te::Tensor;

bool only(const std::vector<Tensor>& list, const Tensor& t) {
  return list.size() == 1 && list[0].same_as(t);
}

// `owner` (a reduction of stage `stage` + 1) as a sum of exponentials about a row value of stage `stage`.
std::optional<RescaledSum> match(const FusionPlan& plan, const Tensor& owner, int stage) {
  std::vector<const te::ReduceNode*> reduces;
  collect_reduces(owner->body, reduces);
  if (reduces.size() != 1) return std::nullopt;
  const te::ReduceNode* reduce = reduces[0];
  if (reduce->op != te::ReduceOp::kSum || reduce->axes.size() != 1) return std::nullopt;
  std::vector<const te::ReadNode*> reads;
  collect_reads(owner->body, reads);
  const te::ReadNode* term = reduce->body.as<te::ReadNode>();
  if (reads.size() != 1 || term == nullptr ||
      !indexed_by(*term, {owner->axes[0].get(), reduce->axes[0].get()})) {
    return std::nullopt;
  }
  // e = exp(x - m), alone in its stage beside the reduction.
  const Tensor terms(term->tensor);
  if (terms.is_placeholder() || plan.role(terms) != Role::kTile) return std::nullopt;
  const Stage& next = plan.stages[stage + 1];
  if (!only(next.tiles, terms) || !only(next.reductions, owner) || !next.row_values.empty())
    return std::nullopt;
  const auto* exp = terms->body.as<te::UnaryNode>();
  if (exp == nullptr || exp->op != te::UnaryOp::kExp) return std::nullopt;
  const auto* deviation = exp->value.as<te::BinaryNode>();
  if (deviation == nullptr || deviation->op != te::BinaryOp::kSub) return std::nullopt;
  const std::optional<Tensor> center = reduced_row_value(plan, deviation->b, terms->axes[0].get(), stage);
  if (!center || !reads_tiles_up_to(plan, deviation->a, stage)) return std::nullopt;
  return RescaledSum{reduce, owner, terms, deviation->a, *center};
}

}  // namespace

std::vector<RescaledSum> find_rescaled_sums(const FusionPlan& plan) {
  std::vector<RescaledSum> found;
  for (std::size_t s = 0; s + 2 < plan.stages.size(); ++s) {
    for (const Tensor& owner : plan.stages[s + 1].reductions) {
      if (auto rescaled = match(plan, owner, static_cast<int>(s))) found.push_back(*rescaled);
    }
  }
  return found;
}

FusionPlan merge_rescaled_sums(const FusionPlan& plan) {
  const std::vector<RescaledSum> found = find_rescaled_sums(plan);
  if (found.empty()) return plan;
  FusionPlan merged = plan;
  for (const RescaledSum& rescaled : found) {
    const int from = merged.stage(rescaled.terms);  // the stage the terms and their sum are in now
    merged.stages[from].tiles.clear();
    merged.stages[from].reductions.clear();
    merged.stages[from - 1].reductions.push_back(rescaled.owner);
    merged.stage_of[merged.program.index_of(rescaled.owner)] = from;
    // The terms are recomputed where they are read, first among that stage's tiles.
    std::vector<Tensor>& later = merged.stages[from + 1].tiles;
    later.insert(later.begin(), rescaled.terms);
    merged.stage_of[merged.program.index_of(rescaled.terms)] = from + 1;
    merged.rescaled.push_back(rescaled);
  }
  drop_empty_stages(merged);
  return merged;
}

}  // namespace comfuse::schedule
