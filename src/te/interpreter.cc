// The reference interpreter's entry points: input checks, evaluation of each compute in topological order
// (contractions through Eigen, the rest through the general evaluator), and the comparison helper.
#include "te/interpreter.h"

#include "te/printer.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>

#include "support/error.h"
#include "te/body_evaluator.h"
#include "te/contraction.h"
#include "support/parallel.h"

namespace comfuse::te {
namespace {

// The reductions of a body, outermost only (reductions do not nest).
std::vector<Expr> top_level_reductions(const Expr& body) {
  std::vector<Expr> found;
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e.kind() == ExprKind::kReduce) {
      found.push_back(e);
      return;
    }
    for_each_child(e, walk);
  };
  walk(body);
  return found;
}

// The values of every tensor of `program` (index as in program.tensors()), each of its dtype, as doubles.
std::vector<std::vector<double>> evaluate_values(const Program& program,
                                                 const std::vector<HostBuffer>& inputs,
                                                 const ReferenceOptions& options) {
  const auto& declared = program.inputs();
  if (inputs.size() != declared.size()) {
    std::string names;
    for (const Tensor& input : declared) names += (names.empty() ? "" : ", ") + input.name();
    throw CompileError("program takes " + std::to_string(declared.size()) + " inputs (" + names +
                       ") but was given " + std::to_string(inputs.size()));
  }
  std::vector<std::vector<double>> values(program.tensors().size());
  for (std::size_t i = 0; i < declared.size(); ++i) {
    const Tensor& input = declared[i];
    const HostBuffer& buffer = inputs[i];
    if (buffer.dtype() != input.dtype() || buffer.shape() != input.shape()) {
      throw CompileError("input '" + input.name() + "': expected " +
                         type_to_string(input.dtype(), input.shape()) + ", got " + buffer.type_string());
    }
    std::vector<double>& v = values[program.index_of(input)];
    v.resize(static_cast<std::size_t>(buffer.numel()));
    for (std::int64_t e = 0; e < buffer.numel(); ++e) v[static_cast<std::size_t>(e)] = buffer.get(e);
  }

  const detail::EvalSettings settings{options.accumulation == ReferenceOptions::Accumulation::kFp64,
                                      support::resolve_threads(options.threads)};
  std::unordered_map<const TensorNode*, std::size_t> position;
  for (std::size_t t = 0; t < program.tensors().size(); ++t) position.emplace(program.tensors()[t].get(), t);
  const detail::ValuesOf values_of = [&](const TensorNode* node) { return values[position.at(node)].data(); };
  for (std::size_t t = 0; t < program.tensors().size(); ++t) {
    const Tensor& tensor = program.tensors()[t];
    if (tensor.is_placeholder()) continue;
    std::int64_t numel = 1;
    for (std::int64_t extent : tensor.shape()) numel *= extent;
    values[t].resize(static_cast<std::size_t>(numel));
    // Contractions run through Eigen: the whole body, or reductions inside it that the general evaluator then
    // reads like tensors.
    detail::Precomputed precomputed;
    std::vector<std::vector<double>> scratch;
    bool done = false;
    if (options.contractions_through_eigen) {
      for (const Expr& reduce : top_level_reductions(tensor->body)) {
        const std::optional<detail::Contraction> contraction =
            detail::match_contraction(*tensor.get(), reduce);
        if (!contraction) continue;
        if (reduce.same_as(tensor->body)) {
          detail::evaluate_contraction(tensor, *contraction, values_of, settings, values[t].data());
          done = true;
          break;
        }
        scratch.emplace_back(static_cast<std::size_t>(numel));
        detail::evaluate_contraction(tensor, *contraction, values_of, settings, scratch.back().data());
        precomputed.emplace(reduce.get(), scratch.back().data());
      }
    }
    if (!done) detail::evaluate_body(tensor, values_of, precomputed, settings, values[t].data());
  }
  return values;
}

HostBuffer to_buffer(const Tensor& tensor, const std::vector<double>& values) {
  HostBuffer buffer(tensor.dtype(), tensor.shape());
  for (std::size_t e = 0; e < values.size(); ++e) buffer.set(static_cast<std::int64_t>(e), values[e]);
  return buffer;
}

}  // namespace

std::vector<HostBuffer> evaluate(const Program& program, const std::vector<HostBuffer>& inputs,
                                 const ReferenceOptions& options) {
  const std::vector<std::vector<double>> values = evaluate_values(program, inputs, options);
  std::vector<HostBuffer> outputs;
  for (const Tensor& output : program.outputs())
    outputs.push_back(to_buffer(output, values[program.index_of(output)]));
  return outputs;
}

std::map<std::string, HostBuffer> evaluate_all(const Program& program, const std::vector<HostBuffer>& inputs,
                                               const ReferenceOptions& options) {
  const std::vector<std::vector<double>> values = evaluate_values(program, inputs, options);
  std::map<std::string, HostBuffer> all;
  for (std::size_t t = 0; t < program.tensors().size(); ++t) {
    const Tensor& tensor = program.tensors()[t];
    if (!tensor.is_placeholder()) all.emplace(tensor.name(), to_buffer(tensor, values[t]));
  }
  return all;
}

Comparison compare(const HostBuffer& out, const HostBuffer& ref) {
  if (out.shape() != ref.shape()) {
    throw CompileError("compare: output " + out.type_string() + " and reference " + ref.type_string() +
                       " differ in shape");
  }
  Comparison result;
  double diff_sq = 0, ref_sq = 0;
  for (std::int64_t e = 0; e < out.numel(); ++e) {
    const double o = out.get(e), r = ref.get(e);
    if (!std::isfinite(o)) ++result.non_finite;
    if (std::isfinite(r)) ref_sq += r * r;
    if (o == r) continue;
    const double diff = std::isfinite(o) && std::isfinite(r) ? std::fabs(o - r) : INFINITY;
    diff_sq += diff * diff;
    result.max_abs_error = std::max(result.max_abs_error, diff);
  }
  if (diff_sq == 0) {
    result.rel_error = 0;
  } else {
    result.rel_error = ref_sq == 0 ? INFINITY : std::sqrt(diff_sq) / std::sqrt(ref_sq);
  }
  return result;
}

}  // namespace comfuse::te
