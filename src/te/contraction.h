// The interpreter's contraction path: computes that are plain (batched) matrix products, run through Eigen.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "te/body_evaluator.h"
#include "te/tensor.h"

namespace comfuse::te::detail {

/// One factor of a contraction: which of the output's axes (or the reduce axis) each of its dimensions reads.
struct ContractionOperand {
  const TensorNode* tensor = nullptr;
  std::vector<int> axis_of_dim;  // output axis index, or -1 for the reduce axis
};

/// out[b..., i, j] = sum_k a[...] * b[...] where `a` reads i and k, `b` reads k and j, and either may read
/// any of the batch axes b... (the output's leading axes).
struct Contraction {
  ContractionOperand a, b;
  std::int64_t k = 0;
};

/// The contraction that reduction `reduce` (a node of compute `tensor`'s body) computes, as a tensor of the
/// compute's shape: when it is exactly sum[k](A(...) * B(...)) of dtype f32, each factor a read of a float
/// tensor (optionally under a widening cast to f32) indexed by distinct plain variables, the compute of rank
/// >= 2, A reading the second-to-last axis and k but not the last, and B the last and k but not the
/// second-to-last (the factors may come in either order). The reduction may be the whole body or part of it
/// (`sum(...) * scale`, `f32(sum(...)) + bias(j)`, a cast to bf16 around it).
std::optional<Contraction> match_contraction(const TensorNode& tensor, const Expr& reduce);

/// The contraction of a compute whose whole body is one (see above).
inline std::optional<Contraction> match_contraction(const Tensor& tensor) {
  return match_contraction(*tensor.get(), tensor->body);
}

/// Evaluates `contraction` over the shape of compute `tensor` into `out` (f32 values as doubles) with Eigen
/// products in float (or double when settings.fp64). Work is split into fixed blocks of rows so that results
/// do not depend on the thread count.
void evaluate_contraction(const Tensor& tensor, const Contraction& contraction, const ValuesOf& values_of,
                          const EvalSettings& settings, double* out);

}  // namespace comfuse::te::detail
