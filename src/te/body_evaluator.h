// The interpreter's general path: one compute's body compiled into flat instruction lists, run over its
// elements.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "te/tensor.h"

namespace comfuse::te::detail {

/// How a compute is evaluated; see interpreter.h for the semantics.
struct EvalSettings {
  bool fp64 = false;  // Accumulation::kFp64
  int threads = 1;    // resolved, at least 1
};

/// The values of a tensor the body reads: numel doubles in row-major order, each already of the tensor's
/// dtype.
using ValuesOf = std::function<const double*(const TensorNode*)>;

/// Values computed elsewhere for some reductions of the body (contractions): each a tensor of the compute's
/// shape.
using Precomputed = std::map<const ExprNode*, const double*>;

/// Evaluates every element of compute `tensor` into `out` (numel doubles, rounded to the tensor's dtype).
/// Reductions listed in `precomputed` are read from there instead of being evaluated.
/// Throws CompileError naming the compute and the element on an i32 division by zero or a read outside a
/// tensor; the error reported is the one at the lowest failing element, whatever the thread count.
void evaluate_body(const Tensor& tensor, const ValuesOf& values_of, const Precomputed& precomputed,
                   const EvalSettings& settings, double* out);

}  // namespace comfuse::te::detail
