// One-pass variance: finding sums of squared deviations and merging them into their center's stage.
#include "schedule/centered_sums.h"

#include <algorithm>
#include <optional>

#include "schedule/read_match.h"
#include "schedule/stage_reads.h"

namespace comfuse::schedule {
namespace {

using te::Tensor;

// `owner` (a reduction of stage `stage` + 1) as a centered sum over the tiles of stages <= `stage`.
std::optional<CenteredSum> match(const FusionPlan& plan, const Tensor& owner, int stage) {
  std::vector<const te::ReduceNode*> reduces;
  collect_reduces(owner->body, reduces);
  if (reduces.size() != 1) return std::nullopt;
  const te::ReduceNode* reduce = reduces[0];
  if (reduce->op != te::ReduceOp::kSum || reduce->axes.size() != 1) return std::nullopt;
  const auto* square = reduce->body.as<te::PowNode>();
  if (square == nullptr || square->exponent != 2) return std::nullopt;
  const auto* deviation = square->base.as<te::BinaryNode>();
  if (deviation == nullptr || deviation->op != te::BinaryOp::kSub) return std::nullopt;
  // m[i]: a row value that stage `stage` reduces, read at the owner's row; x[i, j]: tiles computed by then,
  // read element-aligned (the planner checked the alignment).
  const std::optional<Tensor> center = reduced_row_value(plan, deviation->b, owner->axes[0].get(), stage);
  if (!center || !reads_tiles_up_to(plan, deviation->a, stage)) return std::nullopt;
  // Outside the reduction, the body reads nothing (a scale such as 1 / N is fine).
  std::vector<const te::ReadNode*> value_reads, all_reads;
  collect_reads(deviation->a, value_reads);
  collect_reads(owner->body, all_reads);
  if (all_reads.size() != value_reads.size() + 1) return std::nullopt;
  return CenteredSum{reduce, owner, deviation->a, *center};
}

}  // namespace

std::vector<CenteredSum> find_centered_sums(const FusionPlan& plan) {
  std::vector<CenteredSum> found;
  for (std::size_t s = 0; s + 1 < plan.stages.size(); ++s) {
    for (const Tensor& owner : plan.stages[s + 1].reductions) {
      if (auto centered = match(plan, owner, static_cast<int>(s))) found.push_back(*centered);
    }
  }
  return found;
}

FusionPlan merge_centered_sums(const FusionPlan& plan) {
  const std::vector<CenteredSum> found = find_centered_sums(plan);
  if (found.empty()) return plan;
  FusionPlan merged = plan;
  for (const CenteredSum& centered : found) {
    const int from = merged.stage(centered.owner) - 1;  // the stage it reduces now
    std::vector<Tensor>& list = merged.stages[from].reductions;
    list.erase(
        std::remove_if(list.begin(), list.end(), [&](const Tensor& t) { return t.same_as(centered.owner); }),
        list.end());
    merged.stages[from - 1].reductions.push_back(centered.owner);
    merged.stage_of[merged.program.index_of(centered.owner)] = from;
    merged.centered.push_back(centered);
  }
  drop_empty_stages(merged);
  return merged;
}

}  // namespace comfuse::schedule
