// The compiled form of a compute body: flat instruction lists over registers of lane vectors, one list for
// the body and one per reduction, with every read's addressing folded into coefficients where it can be.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "te/body_evaluator.h"
#include "te/expr.h"
#include "te/tensor.h"

namespace comfuse::te::detail {

/// What an instruction does; the operator within the kind is in Instr::op.
enum class InstrKind : std::uint8_t { kBinary, kCompare, kSelect, kCast, kUnary, kPow, kRead, kReduce };

/// One operation over a register of lanes.
struct Instr {
  InstrKind kind;
  std::uint8_t op = 0;  // BinaryOp, CompareOp, UnaryOp or ReduceOp
  DType dtype;          // of the result
  int dst = -1, a = -1, b = -1, c = -1;
  int exponent = 0;  // kPow
  int read = -1;     // kRead: index into CompiledBody::reads
  int block = -1;    // kReduce: the block of the reduction's body
  Expr expr;         // for messages
};

/// Where a read finds its element: offset + sum(axis_coeffs[d] * axis d) + sum(reduce_coeffs[p] * reduce var
/// p)
/// + sum(stride * value of each dynamic index). Indices affine in the variables fold into the coefficients;
/// the others ("dynamic") are computed into registers and bounds-checked per element.
struct ReadPlan {
  const TensorNode* tensor = nullptr;  // null for a precomputed reduction
  const double* precomputed = nullptr;
  std::int64_t offset = 0;
  std::vector<std::int64_t> axis_coeffs;
  std::vector<std::int64_t> reduce_coeffs;
  struct Dynamic {
    int dim;
    int reg;
    std::int64_t stride, extent;
  };
  std::vector<Dynamic> dynamic;
};

/// An instruction list: the compute's body (block 0) or the body of one reduction.
struct Block {
  std::vector<Instr> code;
  std::vector<int> reads;             // reads whose offsets move with this block's reduce vars
  std::vector<const VarNode*> vars;   // reduce blocks: the reduce axes, outermost first
  std::vector<std::int64_t> extents;  // reduce blocks: their extents
  std::vector<int> var_regs;          // register holding each reduce var as a value, or -1
  int result = -1;                    // reduce blocks: register of the reduced value
};

/// A compute body ready to run.
struct CompiledBody {
  std::vector<Block> blocks;  // [0]: the compute's body; then one per reduction
  std::vector<ReadPlan> reads;
  std::vector<std::pair<int, double>> constants;  // (register, value)
  std::vector<int> axis_regs;                     // register holding each axis as a value, or -1
  int num_regs = 0;
  int result = -1;
};

/// Compiles the body of compute `tensor`. Code that does not depend on a reduction's variables is hoisted out
/// of its loop; shared subexpressions are computed once per block; widening casts cost nothing; the
/// reductions listed in `precomputed` become reads of those tensors.
CompiledBody compile_body(const TensorNode& tensor, const Precomputed& precomputed);

}  // namespace comfuse::te::detail
