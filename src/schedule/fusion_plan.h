// Fusion analysis: how a program splits into a contraction anchor and the memory-intensive stages that
// consume its output tile by tile (DESIGN.md, "Execution model").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "te/program.h"

namespace comfuse::schedule {

/// The contraction the kernel is built around: out[i, j] = sum_k f32(A[i, k]) * f32(B[..]).
struct Anchor {
  te::Tensor tensor;  // the contraction compute, f32 [M, N]
  te::Tensor a;       // input [M, K]
  te::Tensor b;       // input [N, K] when b_k_major, else [K, N]
  bool b_k_major = true;
  std::int64_t m = 0, n = 0, k = 0;
};

/// What a tensor of the program is to the fused kernel.
enum class Role : std::uint8_t {
  kInput,     // a placeholder read by the epilogue or the anchor
  kAnchor,    // the contraction
  kTile,      // [M, N], element (i, j) computed from element (i, j) of its producers
  kRowValue,  // [M], one value per row: a reduction over the columns of a kTile, or arithmetic on those
};

/// How the epilogue reads an input.
enum class Broadcast : std::uint8_t {
  kFull,    // [M, N], element (i, j)
  kRow,     // [N], element j: the same vector for every row (bias, gamma)
  kColumn,  // [M], element i: one value per row
};

struct EpilogueInput {
  te::Tensor tensor;
  Broadcast broadcast;
};

/// The planned tensors, split into stages. Stage s runs after the reductions of stage s-1 have combined
/// over whole rows; stage 0 starts on the accumulator. Row values are produced at the end of the stage
/// whose tiles they reduce.
struct Stage {
  std::vector<te::Tensor> tiles;       // kTile computes whose inputs are available in this stage
  std::vector<te::Tensor> reductions;  // kRowValue computes that reduce this stage's tiles over the columns
  std::vector<te::Tensor> row_values;  // kRowValue computes without a reduction, available from this stage on
};

/// A sum of squared deviations from a row value, sum_j (x[i, j] - m[i])^2, computed in the stage of m itself
/// (merge_centered_sums, schedule knob one_pass_variance) instead of one stage after it: each thread keeps a
/// count, a mean and a sum of squared deviations of its own values (from shifted sums), partials combine with
/// Chan's formula, and the sum about m is M2 + n (mean - m)^2 once m is known.
struct CenteredSum {
  const te::ReduceNode* reduce;  // the sum, inside owner's body
  te::Tensor owner;              // the row value computed from it (a variance)
  te::Expr value;                // x[i, j], the deviation's first operand
  te::Tensor center;             // m, a row value the stage's own reductions produce (a mean)
};

/// A sum of exponentials, sum_j e[i, j] with the tile e[i, j] = exp(x[i, j] - m[i]), computed in the stage of
/// the row value m (merge_rescaled_sums, schedule knob online_softmax) instead of one stage after it: each
/// thread keeps a running maximum of x and the sum of exp(x - that maximum), rescaled when the maximum grows;
/// partials combine by rescaling to the larger maximum, and the sum about m is s exp(max - m) once m is
/// known. The tile e is then computed where it is read (the stage after), not carried.
struct RescaledSum {
  const te::ReduceNode* reduce;  // the sum, inside owner's body
  te::Tensor owner;              // the row value computed from it (a softmax's denominator)
  te::Tensor terms;              // e
  te::Expr value;                // x[i, j], inside e's body
  te::Tensor center;             // m, a row value the stage's own reductions produce (a row maximum)
};

struct FusionPlan {
  te::Program program;
  Anchor anchor;
  std::vector<Role> roles;    // per program.tensors() entry
  std::vector<int> stage_of;  // per program.tensors() entry: the stage that computes it (inputs: 0)
  std::vector<Stage> stages;  // at least one; stages.size() - 1 = number of row-reduction barriers
  std::vector<EpilogueInput> epilogue_inputs;  // inputs other than the anchor's operands, in program order
  /// Tiles read by a stage after the one that computes them: they must stay on chip or be stashed.
  std::vector<te::Tensor> carried_tiles;
  /// Reductions merged into the stage of their center (empty unless merge_centered_sums made the plan).
  std::vector<CenteredSum> centered;
  /// Sums of exponentials merged into the stage of their center (empty unless merge_rescaled_sums made the
  /// plan).
  std::vector<RescaledSum> rescaled;

  Role role(const te::Tensor& t) const { return roles[program.index_of(t)]; }
  int stage(const te::Tensor& t) const { return stage_of[program.index_of(t)]; }
  bool has_reductions() const { return stages.size() > 1; }
};

/// Analyses `program`. Throws CompileError naming the op and the reason when it cannot be fused into one
/// GEMM kernel: no contraction, a second contraction (back-to-back GEMMs are planned separately), a
/// batched contraction, a read that is not element-aligned with the tile (transposed, shifted), a reduction
/// over rows instead of columns, or an output that is not [M, N] or [M].
FusionPlan plan_fusion(const te::Program& program);

/// The tiles read by a stage after the one computing them, in program order (plan_fusion's carried_tiles,
/// recomputed after stages change).
std::vector<te::Tensor> carried_tiles_of(const FusionPlan& plan);

/// Floats a thread's row partial of `reduce` (a reduce node of one of the plan's reductions) holds in an
/// exchange across warpgroups or a cluster: three for a centered sum (M2, count, mean), two for a rescaled
/// sum (sum, running maximum), one for any other reduction.
int exchanged_floats(const FusionPlan& plan, const te::ReduceNode* reduce);

/// Removes the stages that hold nothing, except the last (where the reductions of the one before end), moving
/// every later tensor one stage down; then recomputes the carried tiles.
void drop_empty_stages(FusionPlan& plan);

std::string_view role_name(Role role);
std::string_view broadcast_name(Broadcast broadcast);
/// A readable summary: anchor, stages with their tiles and reductions, carried tiles, epilogue inputs.
std::string to_string(const FusionPlan& plan);

}  // namespace comfuse::schedule
