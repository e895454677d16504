// A program: the inputs and outputs of a tensor-expression DAG, validated once at construction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "te/tensor.h"

namespace comfuse::te {

class Program {
 public:
  /// Validates and throws CompileError naming the tensor when: a placeholder is read but not listed in
  /// `inputs`; an input is not a placeholder or is listed twice; two distinct tensors share a name; an
  /// output is a placeholder or listed twice; a reduce axis is bound in two computes; there are no outputs.
  Program(std::vector<Tensor> inputs, std::vector<Tensor> outputs);

  const std::vector<Tensor>& inputs() const { return inputs_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  /// Every tensor in canonical topological order: a depth-first walk from the outputs in order, each
  /// compute's reads in order of first appearance in its body, producers before consumers. The order
  /// depends only on the program's structure, never on how or in which order it was built.
  const std::vector<Tensor>& tensors() const { return tensors_; }
  /// The tensor called `name`, if the program has one.
  std::optional<Tensor> find(const std::string& name) const;
  /// Position of `tensor` in tensors(); throws InternalError when it is not part of the program.
  std::size_t index_of(const Tensor& tensor) const;
  /// The tensors whose elements `tensor`'s body reads, each once, in order of first appearance.
  static std::vector<Tensor> reads_of(const Tensor& tensor);

 private:
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  std::vector<Tensor> tensors_;
};

}  // namespace comfuse::te
