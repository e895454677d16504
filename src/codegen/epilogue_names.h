// Names and constants the epilogue emitter's files share.
#pragma once

#include <string>

#include "codegen/expr_emitter.h"
#include "te/dtype.h"
#include "te/expr.h"

namespace comfuse::codegen {

/// The C literal of a reduction's identity: 0, -inf or +inf.
inline std::string identity(te::ReduceOp op) {
  switch (op) {
    case te::ReduceOp::kSum:
      return "0.0f";
    case te::ReduceOp::kMax:
      return "__int_as_float(0xff800000)";
    case te::ReduceOp::kMin:
      return "__int_as_float(0x7f800000)";
  }
  return "0.0f";
}

/// `a` combined with `b` by the reduction `op`, as a C expression.
inline std::string combine(te::ReduceOp op, const std::string& a, const std::string& b) {
  switch (op) {
    case te::ReduceOp::kSum:
      return a + " + " + b;
    case te::ReduceOp::kMax:
      return "fmaxf(" + a + ", " + b + ")";
    case te::ReduceOp::kMin:
      return "fminf(" + a + ", " + b + ")";
  }
  return a;
}

/// The per-thread partials of reduction `index` of stage `stage` (the state of a merged sum adds suffixes).
inline std::string slot_name(int stage, int index) {
  return "red" + std::to_string(stage) + "_" + std::to_string(index);
}

/// Where carried tile c keeps element (grow, gcol) in the L2 stash: row-major [M, N] per carried tile. A
/// fragment-major layout (consecutive threads on consecutive words) measured slower on the H200
/// (benchmarks/NOTES.md).
inline std::string stash_index(const std::string& c) {
  return "((size_t)" + c + " * M + grow) * N + gcol";
}

/// Two neighbouring columns loaded as one word (vector_loads, deep_reads): a float2 for f32, a u32 holding
/// two 16-bit values otherwise; and the word for columns out of bounds.
inline std::string pair_type(te::DType dtype) {
  return dtype == te::DType::f32 ? "float2" : "u32";
}
inline std::string pair_zero(te::DType dtype) {
  return dtype == te::DType::f32 ? "make_float2(0.0f, 0.0f)" : "0u";
}

/// Element i of the pair in `pair`, chosen by i's parity, as a float.
inline std::string pair_element(te::DType dtype, const std::string& pair) {
  if (dtype == te::DType::f32) return "((i & 1) ? " + pair + ".y : " + pair + ".x)";
  return widen(dtype, "(u16)((i & 1) ? " + pair + " >> 16 : " + pair + " & 0xffffu)");
}

/// The pair's first or `second` column, as a float.
inline std::string pair_half(te::DType dtype, const std::string& pair, bool second) {
  if (dtype == te::DType::f32) return pair + (second ? ".y" : ".x");
  return widen(dtype, second ? "(u16)(" + pair + " >> 16)" : "(u16)(" + pair + " & 0xffffu)");
}

/// A pair load of carried tile c's two neighbouring columns from the L2 stash (zero out of bounds).
inline std::string stash_pair_load(te::DType dtype, const std::string& c) {
  return "inb ? *(const " + pair_type(dtype) + "*)&stash[" + stash_index(c) + "] : " + pair_zero(dtype);
}

}  // namespace comfuse::codegen
