// Names and constants the epilogue emitter's files share.
#pragma once

#include <string>

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

}  // namespace comfuse::codegen
