// Program validation and canonical topological order.
#include "te/program.h"

#include <map>
#include <set>

#include "support/error.h"

namespace comfuse::te {
namespace {

void collect_reads(const Expr& e, std::vector<Tensor>& reads, std::set<const TensorNode*>& seen) {
  if (const auto* read = e.as<ReadNode>()) {
    if (seen.insert(read->tensor.get()).second) reads.emplace_back(read->tensor);
  }
  for_each_child(e, [&](const Expr& child) { collect_reads(child, reads, seen); });
}

void collect_reduce_axes(const Expr& e, std::vector<const VarNode*>& axes) {
  if (const auto* reduce = e.as<ReduceNode>()) {
    for (const Var& axis : reduce->axes) axes.push_back(axis.get());
  }
  for_each_child(e, [&](const Expr& child) { collect_reduce_axes(child, axes); });
}

void visit_post_order(const Tensor& t, std::set<const TensorNode*>& done, std::vector<Tensor>& order) {
  if (done.count(t.get())) return;
  done.insert(t.get());
  if (!t.is_placeholder()) {
    for (const Tensor& producer : Program::reads_of(t)) visit_post_order(producer, done, order);
  }
  order.push_back(t);
}

}  // namespace

std::vector<Tensor> Program::reads_of(const Tensor& tensor) {
  std::vector<Tensor> reads;
  if (tensor.is_placeholder()) return reads;
  std::set<const TensorNode*> seen;
  collect_reads(tensor->body, reads, seen);
  return reads;
}

Program::Program(std::vector<Tensor> inputs, std::vector<Tensor> outputs)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  if (outputs_.empty()) throw CompileError("program has no outputs");
  std::set<const TensorNode*> input_set;
  for (const Tensor& input : inputs_) {
    if (input.get() == nullptr) throw CompileError("program input is an undefined tensor");
    if (!input.is_placeholder()) {
      throw CompileError("program input '" + input.name() + "' is a compute, not a placeholder");
    }
    if (!input_set.insert(input.get()).second) {
      throw CompileError("program input '" + input.name() + "' is listed twice");
    }
  }
  std::set<const TensorNode*> output_set;
  for (const Tensor& output : outputs_) {
    if (output.get() == nullptr) throw CompileError("program output is an undefined tensor");
    if (output.is_placeholder()) {
      throw CompileError("program output '" + output.name() + "' is an input placeholder, not a compute");
    }
    if (!output_set.insert(output.get()).second) {
      throw CompileError("program output '" + output.name() + "' is listed twice");
    }
  }

  std::set<const TensorNode*> done;
  for (const Tensor& output : outputs_) visit_post_order(output, done, tensors_);

  std::map<std::string, const TensorNode*> by_name;
  std::map<const VarNode*, std::string> reduce_axis_owner;
  for (const Tensor& t : tensors_) {
    auto [it, inserted] = by_name.emplace(t.name(), t.get());
    if (!inserted) throw CompileError("two distinct tensors are named '" + t.name() + "'");
    if (t.is_placeholder()) {
      if (!input_set.count(t.get())) {
        throw CompileError("tensor '" + t.name() + "' is read but is not an input of the program");
      }
      continue;
    }
    std::vector<const VarNode*> axes;
    collect_reduce_axes(t->body, axes);
    for (const VarNode* axis : axes) {
      auto [owner, fresh] = reduce_axis_owner.emplace(axis, t.name());
      if (!fresh) {
        throw CompileError("reduce axis '" + axis->name + "' is reused by computes '" + owner->second +
                           "' and '" + t.name() + "'");
      }
    }
  }
  // An unused input is kept (it is part of the signature), ahead of everything else in input order.
  std::vector<Tensor> unused;
  for (const Tensor& input : inputs_) {
    if (done.count(input.get())) continue;
    auto [it, inserted] = by_name.emplace(input.name(), input.get());
    if (!inserted) throw CompileError("two distinct tensors are named '" + input.name() + "'");
    unused.push_back(input);
  }
  tensors_.insert(tensors_.begin(), unused.begin(), unused.end());
}

std::optional<Tensor> Program::find(const std::string& name) const {
  for (const Tensor& t : tensors_) {
    if (t.name() == name) return t;
  }
  return std::nullopt;
}

std::size_t Program::index_of(const Tensor& tensor) const {
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].same_as(tensor)) return i;
  }
  throw InternalError("tensor '" + tensor.name() + "' is not part of the program");
}

}  // namespace comfuse::te
