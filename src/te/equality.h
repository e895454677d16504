// Structural equality and hashing of expressions, tensors and programs.
//
// Two objects are structurally equal when they have the same shape of tree, the same names, dtypes, shapes
// and constants, and variables that correspond by position (the d-th axis of one compute to the d-th axis
// of the other; reduce axes by their order of binding). Equal objects hash equally, in every process.
#pragma once

#include <cstdint>

#include "te/expr.h"
#include "te/program.h"
#include "te/tensor.h"

namespace comfuse::te {

bool structural_equal(const Tensor& a, const Tensor& b);
bool structural_equal(const Program& a, const Program& b);
std::uint64_t structural_hash(const Tensor& t);
std::uint64_t structural_hash(const Program& program);

}  // namespace comfuse::te
