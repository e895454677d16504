// Lowers a TE expression to a CUDA C expression with the reference interpreter's semantics: each node's value
// is computed in f32 (i32, bool for integer and logical nodes) and rounded to the node's dtype.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "codegen/code_stream.h"
#include "te/expr.h"

namespace comfuse::codegen {

/// A float value kept as `base` times a positive constant `factor` (a scaled view): max, exp(x - max) and the
/// like can take the factor once instead of once an element.
struct ScaledValue {
  std::string base;   ///< C expression of type float
  double factor = 1;  ///< > 0, finite
};

/// What names stand for at the point of emission.
struct ExprBindings {
  /// A read of a tensor: its value at the current element, as a C expression of type float.
  std::map<const te::TensorNode*, std::string> reads;
  /// Iteration variables and reduce axes, as C expressions of type int.
  std::map<const te::VarNode*, std::string> vars;
  /// Reductions already combined elsewhere: their value as a C expression of type float.
  std::map<const te::ReduceNode*, std::string> reductions;
  /// Reads that are also bound as a scaled view (their entry in `reads` is the product): an approximate
  /// exp(read - b) folds the factor into its FFMA.
  std::map<const te::TensorNode*, ScaledValue> scaled_reads;
  /// exp and tanh on the special-function unit, for values that are rounded to 16 bits before they are used:
  /// exp as ex2.approx of x·log2 e (a few ulp, what Triton lowers exp to; exp(a - b) takes one FFMA before
  /// it), tanh as tanh.approx (relative error below 2^-10.9, an eighth of bf16's rounding step). The kernel
  /// defines `float exp2_approx(float)` and `float tanh_approx(float)`.
  bool approximate_math = false;
  /// An f32 division by a constant as a multiplication by the constant's reciprocal rounded to f32 (within
  /// an ulp of the quotient).
  bool reciprocal_division = false;
  /// 16-bit roundings as round_bf16_packed / round_f16_packed (schedule.packed_rounding): the packed
  /// conversion's instruction, the same bits. The kernel defines both.
  bool packed_rounding = false;
  /// Divisions to emit as a multiplication by the divisor's reciprocal, `a * (1.0f / b)`, where this holds
  /// for the division (with a divisor that does not change along the elements, the compiler computes the
  /// reciprocal once).
  std::function<bool(const te::Expr&)> multiply_by_reciprocal;
};

/// The C expression for `e`. Throws InternalError for a read, variable or reduction with no binding: the
/// planner guarantees every one is bound.
std::string emit_expr(const te::Expr& e, const ExprBindings& bindings);

/// `e` as a scaled view when it is one in f32: a positive constant times a value, a scaled read, or a
/// select between a scaled view and 0 or ±inf (which every positive factor leaves as they are). Otherwise
/// nullopt. base · factor, one f32 multiply, is exactly the value of `e`; and since f32 rounding is
/// monotonic, the max of such products is the factor times the max of the bases.
std::optional<ScaledValue> emit_scaled(const te::Expr& e, const ExprBindings& bindings);

/// The definitions approximate_math's expressions call: `exp2_approx` and, with `tanh_comment`,
/// `tanh_approx`, each after its comment line.
void define_approximate_math(CodeStream& out, const std::string& exp_comment,
                             const std::optional<std::string>& tanh_comment);

/// A float literal that reads back as exactly `value` (f32), including infinities and NaN.
std::string float_literal(double value);

/// The C type of one element of a tensor in global or shared memory: u16 for bf16/f16 (raw bits), float,
/// int. Throws InternalError for bool, which no kernel parameter has.
std::string memory_element_type(te::DType dtype);

/// An f32 (or int) value as stored to memory of `dtype`: rounded to the 16-bit types' bits, else as it is.
std::string store_value(te::DType dtype, const std::string& value);

/// An element as read from memory of `dtype`, as the epilogue computes with it: 16-bit bits widened to f32.
std::string widen(te::DType dtype, const std::string& element);

}  // namespace comfuse::codegen
