// Back-to-back contraction analysis: GEMM1 → memory-intensive tiles → GEMM2, where GEMM1's output feeds
// GEMM2's contraction (MLPs, attention). The intermediate stays on chip one block of the chained axis at a
// time; reductions over that axis between the GEMMs (softmax's max and sum) are derived into their online
// form — running max, sums and the GEMM2 accumulator rescaled when the max grows — from the program itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "te/program.h"

namespace comfuse::schedule {

/// out[b.., i, j] = sum_k f32(A[b.., i, k]) * f32(B[b.., j, k]) (or B[b.., k, j]), with leading batch axes.
struct Contraction {
  te::Tensor tensor;  // f32 [batch.., M, N]
  te::Tensor a, b;
  bool b_k_major = true;  // B is [batch.., N, K]
  std::vector<std::int64_t> batch;
  std::int64_t m = 0, n = 0, k = 0;
};

/// A row statistic over the chained axis, as the blocked kernel keeps it.
struct OnlineStatistic {
  enum class Kind : std::uint8_t {
    kRunningMax,   // max over the blocks so far
    kPlainSum,     // sum of a tile that does not depend on a running max
    kRescaledSum,  // sum of a tile shifted by `shift`: multiplied by exp(old - new) when the max grows
  };
  te::Tensor tensor;  // [batch.., M]
  Kind kind = Kind::kRunningMax;
  te::Tensor source;                // the tile it reduces
  std::optional<te::Tensor> shift;  // kRescaledSum: the running max
};

struct B2BPlan {
  te::Program program;
  Contraction first, second;  // second.k == first.n: the chained axis
  /// Elementwise tiles [batch.., M, N] between the contractions, in program order.
  std::vector<te::Tensor> tiles;
  std::vector<OnlineStatistic> statistics;
  /// Row values computed from statistics only (e.g. 1/sum), usable as the operand's final factor.
  std::vector<te::Tensor> row_values;
  /// GEMM2 accumulates numerator · B2 over the chained axis; the numerator is shifted by `shift` (none: not
  /// shifted), so the accumulator is rescaled with it; at the end it is divided by `divisor` or multiplied
  /// by `multiplier` (none: neither). `rounded_to` is the dtype the program rounds the operand to before
  /// GEMM2 (the kernel rounds the numerator to it).
  std::optional<te::Tensor> numerator;  // always set by plan_b2b
  std::optional<te::Tensor> shift;
  std::optional<te::Tensor> divisor;
  std::optional<te::Tensor> multiplier;
  te::DType rounded_to = te::DType::bf16;
  /// Elementwise computes on GEMM2's output [batch.., M, O], in program order.
  std::vector<te::Tensor> epilogue;

  bool online() const { return shift.has_value(); }
  /// The statistics that are running maxima, in program order (the fused kernel and the mask take one).
  std::vector<const OnlineStatistic*> running_maxima() const;
};

/// Analyses `program` as two chained contractions. Throws CompileError naming the op and the reason when it
/// is not one (no or one contraction: plan_fusion's case; three or more; GEMM2 not consuming GEMM1 through
/// its first operand; operands that are not bf16/f16 inputs), or when a reduction over the chained axis has
/// no online form (its summand depends on a running max other than through exp(x - max), or on another sum).
B2BPlan plan_b2b(const te::Program& program);

/// A back-to-back program run as two kernels: GEMM1 with the tiles between, writing GEMM2's operand to memory
/// (`first`), then GEMM2 with its epilogue reading it back (`second`, whose first input is that operand).
/// Each part has one contraction, for plan_fusion. This is what runs where the fused kernel loses or cannot
/// be generated.
struct SplitB2B {
  te::Program first;
  te::Program second;
};
SplitB2B split_b2b(const B2BPlan& plan);

/// The programs `program` runs as today: itself when plan_fusion takes it; else, for a back-to-back program,
/// its two parts (split_b2b) when plan_fusion takes both. Throws CompileError with the single-kernel reason,
/// and the two-kernel one where the program is back-to-back, otherwise.
std::vector<te::Program> kernel_programs(const te::Program& program);

/// A readable summary: both contractions, the tiles between, the online statistics, the operand's factors.
std::string to_string(const B2BPlan& plan);

}  // namespace comfuse::schedule
