// A CPU model of the blocked back-to-back kernel a B2BPlan describes: the chained axis is walked one block of
// columns at a time, the running max and sums are updated and the GEMM2 accumulator rescaled exactly as the
// plan's online form says, the numerator rounded to the operand dtype before it is accumulated. Comparing it
// with the reference interpreter checks the derivation, tails included.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "schedule/b2b_plan.h"
#include "te/body_evaluator.h"
#include "te/interpreter.h"

namespace comfuse::schedule {

inline double round_to(double value, te::DType dtype) {
  te::HostBuffer one(dtype, {1});
  one.set(0, value);
  return one.get(0);
}

/// The program's output (its first), computed blockwise with blocks of `block` chained columns.
inline std::vector<double> simulate_b2b(const B2BPlan& plan, const std::vector<te::HostBuffer>& inputs, int block) {
  using Values = std::vector<double>;
  const te::Program& program = plan.program;
  std::map<const te::TensorNode*, Values> values;
  auto store = [&](const te::Tensor& t, const te::HostBuffer& buffer) {
    Values v(static_cast<std::size_t>(buffer.numel()));
    for (std::int64_t i = 0; i < buffer.numel(); ++i) v[i] = buffer.get(i);
    values[t.get()] = std::move(v);
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) store(program.inputs()[i], inputs[i]);
  const std::map<std::string, te::HostBuffer> all = te::evaluate_all(program, inputs);
  for (const te::Tensor& t : program.tensors()) {
    if (!t.is_placeholder()) store(t, all.at(t.name()));
  }
  const te::detail::EvalSettings settings;
  auto evaluate = [&](const te::Tensor& t, const std::map<const te::TensorNode*, const Values*>& overrides) {
    Values out(static_cast<std::size_t>(values.at(t.get()).size()));
    te::detail::evaluate_body(
        t,
        [&](const te::TensorNode* node) {
          const auto it = overrides.find(node);
          return it != overrides.end() ? it->second->data() : values.at(node).data();
        },
        {}, settings, out.data());
    return out;
  };

  std::int64_t rows = plan.first.m;
  for (std::int64_t b : plan.first.batch) rows *= b;
  const std::int64_t n = plan.first.n, o_extent = plan.second.n, m = plan.first.m;
  const double inf = std::numeric_limits<double>::infinity();
  const te::TensorNode* max_node = plan.shift ? plan.shift->get() : nullptr;
  Values running_max(rows, -inf), safe_max(rows, 0.0), acc(rows * o_extent, 0.0);
  std::map<const te::TensorNode*, Values> sums;
  for (const OnlineStatistic& s : plan.statistics) {
    if (s.kind != OnlineStatistic::Kind::kRunningMax) sums[s.tensor.get()] = Values(rows, 0.0);
  }
  const Values& b2 = values.at(plan.second.b.get());
  for (std::int64_t j0 = 0; j0 < n; j0 += block) {
    const std::int64_t j1 = std::min(n, j0 + block);
    Values scale(rows, 1.0);
    if (max_node != nullptr) {
      const OnlineStatistic* max_stat = nullptr;
      for (const OnlineStatistic& s : plan.statistics) {
        if (s.tensor.get() == max_node) max_stat = &s;
      }
      const Values& source = values.at(max_stat->source.get());
      for (std::int64_t r = 0; r < rows; ++r) {
        double block_max = -inf;
        for (std::int64_t j = j0; j < j1; ++j) block_max = std::max(block_max, source[r * n + j]);
        const double next = std::max(running_max[r], block_max);
        scale[r] = running_max[r] == -inf ? 0.0 : std::exp(running_max[r] - next);
        running_max[r] = next;
        safe_max[r] = next == -inf ? 0.0 : next;  // a fully masked prefix: exp(-inf - 0) = 0
      }
    }
    // The tiles of this block, computed against the running max.
    std::map<const te::TensorNode*, Values> tiles;
    std::map<const te::TensorNode*, const Values*> overrides;
    if (max_node != nullptr) overrides[max_node] = &safe_max;
    for (const te::Tensor& t : plan.tiles) {
      tiles[t.get()] = evaluate(t, overrides);
      overrides[t.get()] = &tiles[t.get()];
    }
    for (const OnlineStatistic& s : plan.statistics) {
      if (s.kind == OnlineStatistic::Kind::kRunningMax) continue;
      const Values& source = tiles.count(s.source.get()) ? tiles.at(s.source.get()) : values.at(s.source.get());
      const bool rescaled = s.kind == OnlineStatistic::Kind::kRescaledSum;
      Values& sum = sums.at(s.tensor.get());
      for (std::int64_t r = 0; r < rows; ++r) {
        double part = 0;
        for (std::int64_t j = j0; j < j1; ++j) part += source[r * n + j];
        sum[r] = (rescaled ? sum[r] * scale[r] : sum[r]) + part;
      }
    }
    const Values& numerator = tiles.at(plan.numerator->get());
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t batch = r / m;
      for (std::int64_t o = 0; o < o_extent; ++o) {
        double part = 0;
        for (std::int64_t j = j0; j < j1; ++j) {
          const std::int64_t at = plan.second.b_k_major ? (batch * o_extent + o) * n + j : (batch * n + j) * o_extent + o;
          part += round_to(numerator[r * n + j], plan.rounded_to) * b2[at];
        }
        acc[r * o_extent + o] = acc[r * o_extent + o] * scale[r] + part;
      }
    }
  }
  // The final factor, from the statistics as the blocked loop left them.
  std::map<const te::TensorNode*, const Values*> final_overrides;
  for (auto& [node, sum] : sums) final_overrides[node] = &sum;
  std::map<const te::TensorNode*, Values> row_values;
  for (const te::Tensor& t : plan.row_values) {
    row_values[t.get()] = evaluate(t, final_overrides);
    final_overrides[t.get()] = &row_values[t.get()];
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    double factor = 1;
    if (plan.divisor) factor = 1 / final_overrides.at(plan.divisor->get())->at(r);
    if (plan.multiplier) factor = final_overrides.at(plan.multiplier->get())->at(r);
    for (std::int64_t o = 0; o < o_extent; ++o) acc[r * o_extent + o] *= factor;
  }
  const te::Tensor& output = program.outputs()[0];
  if (output.same_as(plan.second.tensor)) return acc;
  return evaluate(output, {{plan.second.tensor.get(), &acc}});
}

}  // namespace comfuse::schedule
