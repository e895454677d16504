// Chained columns a mask removes: where a back-to-back program's softmax runs over a tile that is -inf above
// a diagonal (a causal mask), the blocks of chained columns wholly above it add nothing and need not be
// computed.
#pragma once

#include <cstdint>
#include <optional>

#include "schedule/b2b_plan.h"

namespace comfuse::schedule {

/// `d` such that chained column j of row i adds nothing to GEMM2 or to any statistic whenever j > i + d, or
/// nullopt when the program does not show it. Recognised: the running max reduces a tile
/// select(j <= i + d, x, -inf) (also <, >=, > with the sides swapped, and an integer offset on either side),
/// the numerator is exp(that tile - the running max) and every sum reduces the numerator: exp(-inf - max) is
/// 0.
std::optional<std::int64_t> masked_above_diagonal(const B2BPlan& plan);

/// The FLOPs of both contractions (2 per multiply-add, batches included) over the (row, chained column) pairs
/// that add something: all M x N without a mask, those with j <= i + d under one (about half for a causal
/// mask, the count FlashAttention's papers use).
std::int64_t b2b_flops(const B2BPlan& plan);

}  // namespace comfuse::schedule
