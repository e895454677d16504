// Human-readable text of expressions, tensors and programs (for `comfuse show`, errors and tests).
#pragma once

#include <string>

#include "te/expr.h"
#include "te/tensor.h"

namespace comfuse::te {

class Program;

/// A shape as written in programs and messages: "[4, 8]".
std::string shape_to_string(const std::vector<std::int64_t>& shape);
/// A dtype and shape: "bf16[4, 8]".
std::string type_to_string(DType dtype, const std::vector<std::int64_t>& shape);
/// Infix text of an expression: `sum[k<128](f32(X[i0, k]) * f32(W[k, i1]))`.
std::string to_string(const Expr& e);
/// The definition of a tensor: `Y: f32[256, 512] = compute(i0, i1) ...` or `X: bf16[256, 128] input`.
std::string to_string(const Tensor& t);
/// Every tensor of a program, one per line, in the order of Program::tensors() (producers before consumers),
/// then the outputs line.
std::string to_string(const Program& program);
/// Shortest decimal text that reads back as the same double.
std::string format_double(double value);

}  // namespace comfuse::te
