// The CPU reference interpreter: evaluates any program on host buffers; every GPU kernel is judged against
// it.
//
// Semantics (the GPU code generator implements the same):
// - Every expression node yields a value of its dtype: it is computed in double, then rounded to the node's
//   dtype with round_to_dtype (nearest-even). bf16 and f16 nodes are always rounded; f32 nodes are rounded to
//   float with Accumulation::kFp32 and left in double with kFp64 (for tolerance studies). Constants are
//   already of their dtype. Stored tensor elements are always rounded to the tensor's dtype, in both modes.
// - i32 nodes use integer arithmetic wrapping at 32 bits; division truncates towards zero and a zero divisor
//   throws CompileError naming the compute and the element. bool nodes are 0 or 1.
// - Math is the C library's in double: exp, log, tanh, erf, sqrt, rsqrt = 1/sqrt, sigmoid = 1/(1+exp(-x)),
//   abs, neg, pow with an integer exponent (negative allowed for floats; pow(x, 0) = 1), then rounded.
//   min and max return NaN when either operand is NaN. Comparisons with NaN are false except !=.
// - select is a value select, not control flow: both operands are evaluated for every element (as the GPU's
//   branch-free code does), so a read or a division in the unselected operand must still be valid.
// - cast: to a float dtype rounds to nearest-even; to i32 truncates towards zero, saturates at the i32 range
//   and maps NaN to 0; a bool converts to 0 or 1.
// - Reductions (sum, max, min) visit their axes in row-major order of the axes list (the first axis
//   outermost). Float reductions accumulate in f32 (kFp32: the running value is rounded to float after each
//   step) or in double (kFp64); the result is rounded to the node's dtype. max/min start from -inf/+inf and
//   propagate NaN. i32 reductions accumulate in 64-bit integers and wrap the result to 32 bits; their max/min
//   start from the i32 limits.
// - A read index outside the tensor's extent throws CompileError naming the compute, the read and the element
//   (the DSL already rejects indices that are provably out of range; this catches the data-dependent rest).
// - Contractions `sum[k](A(...) * B(...))` (f32, each factor optionally a widening cast to f32, plain axis
//   variables as indices; GEMMs and batched GEMMs with either operand layout) run through Eigen matrix
//   products, whether they are a compute's whole body or a reduction inside it (`sum(...) * scale`). Their
//   summation order differs from the sequential order above, so results may differ from the general
//   evaluator within float rounding; they do not depend on the thread count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "te/host_buffer.h"
#include "te/program.h"

namespace comfuse::te {

struct ReferenceOptions {
  enum class Accumulation { kFp32, kFp64 };
  /// Precision of f32 nodes and of float reductions (see the semantics above).
  Accumulation accumulation = Accumulation::kFp32;
  /// Worker threads; 0 means the hardware concurrency. Results are bit-identical for every thread count.
  int threads = 0;
  /// Evaluate recognised contractions with Eigen matrix products. Off: everything goes through the general
  /// evaluator in sequential order (slower; for checking the two against each other).
  bool contractions_through_eigen = true;
};

/// Evaluates `program` on `inputs`, one buffer per program.inputs() in the same order, and returns the
/// outputs in program.outputs() order. Throws CompileError when the number of inputs differs from the
/// program's, when an input's dtype or shape differs from its placeholder's ("input 'X': expected bf16[4, 8],
/// got f32[4, 8]"), or when evaluation divides an i32 by zero or reads outside a tensor.
std::vector<HostBuffer> evaluate(const Program& program, const std::vector<HostBuffer>& inputs,
                                 const ReferenceOptions& options = {});

/// Same as evaluate(), returning every compute tensor of the program (outputs and intermediates) by name.
std::map<std::string, HostBuffer> evaluate_all(const Program& program, const std::vector<HostBuffer>& inputs,
                                               const ReferenceOptions& options = {});

/// How far `out` is from the reference `ref`.
struct Comparison {
  /// ||out - ref|| / ||ref|| (Frobenius); 0 when both are zero, inf when only ref is zero.
  double rel_error = 0;
  /// max |out - ref|.
  double max_abs_error = 0;
  /// Number of NaN or infinite elements of `out`.
  std::int64_t non_finite = 0;
};

/// Compares `out` with `ref` elementwise. Elements equal in both (including equal infinities) count as no
/// error; any other pair involving a NaN or an infinity makes rel_error and max_abs_error infinite. Throws
/// CompileError when the shapes differ (dtypes may differ: a bf16 kernel output against an f32 reference).
Comparison compare(const HostBuffer& out, const HostBuffer& ref);

}  // namespace comfuse::te
