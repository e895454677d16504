// Schedule legality and the default heuristic (when each knob applies: knob_rules.cc; the JSON and text
// forms: schedule_json.cc).
#include "schedule/schedule.h"

#include <algorithm>
#include <optional>

#include "schedule/read_match.h"
#include "support/error.h"
#include "te/expr_inl.h"

namespace comfuse::schedule {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// The most floats of row partials ending any one stage: the slots of the cluster exchange.
int row_reductions_per_stage(const FusionPlan& plan) {
  int most = 1;
  for (const Stage& stage : plan.stages) {
    int count = 0;
    for (const te::Tensor& t : stage.reductions) {
      std::vector<const te::ReduceNode*> reduces;
      collect_reduces(t->body, reduces);
      for (const te::ReduceNode* reduce : reduces) count += exchanged_floats(plan, reduce);
    }
    most = std::max(most, count);
  }
  return most;
}

}  // namespace

std::int64_t Schedule::shared_memory_bytes(int row_reductions) const {
  const std::int64_t ring = static_cast<std::int64_t>(stages) * (bm + bn) * bk * 2;
  const std::int64_t barriers = 2 * 8 * stages + 64;
  // Row partials, double-buffered, one float per row and reduction: from each cluster peer for the DSMEM
  // exchange, and from each of the two ping-pong warpgroups (which own the same rows) for their combine.
  // On a persistent grid, ping-pong warpgroups walk alternate row blocks and each exchanges on its own.
  // The exchange through global memory holds nothing here, and then ping-pong warpgroups that own their
  // rows keep no combine buffer either.
  const bool dsmem = cluster_n > 1 && !global_exchange;
  const std::int64_t sources =
      (dsmem ? cluster_n * (alternate_row_blocks() ? 2 : 1) : 0) + (warpgroup_combine_buffers() ? 2 : 0);
  const std::int64_t reduction_scratch =
      static_cast<std::int64_t>(4) * bm * std::max(1, row_reductions) * sources * 2;
  return 1024 /* alignment slack for 128-byte swizzle */ + ring + output_staging_bytes() + barriers +
         reduction_scratch;
}

// The TMA-store epilogue stages one 16-bit output tile per consumer warpgroup in 64-column boxes.
template <typename Fail>
void check_tma_store(const FusionPlan& plan, const Schedule& s, const Fail& fail) {
  if (s.deferred()) {  // the stash's one bf16 tile (or its terms) leaves through the staging buffer
    if (!(s.bf16_stash || s.stash_terms) || plan.carried_tiles.size() != 1) {
      fail(
          "tma_store=true with a deferred reduction needs a bf16 stash (bf16_stash=true or stash_terms=true) "
          "and one carried tile (" +
          std::to_string(plan.carried_tiles.size()) + " carried, bf16_stash=" +
          (s.bf16_stash ? "true" : "false") + ", stash_terms=" + (s.stash_terms ? "true" : "false") + ")");
    }
    if (s.bn % 64 != 0)
      fail("tma_store=true with BN=" + std::to_string(s.bn) +
           ": the stash tile leaves in boxes of 64 columns");
    if (plan.anchor.n % 8 != 0) {
      fail("tma_store=true with N=" + std::to_string(plan.anchor.n) +
           ": stash rows must be 16-byte aligned for TMA (N a multiple of 8)");
    }
    return;
  }
  if (plan.has_reductions()) {  // combined in the kernel: the output is written over a staged input's slot
    const te::Tensor& out = plan.program.outputs()[0];
    if (in_place_store_input(plan, s) == nullptr ||
        plan.stage(out) != static_cast<int>(plan.stages.size()) - 1) {
      fail(
          "tma_store=true with row reductions combined in the kernel writes the last stage's output over the "
          "staged slot of a 16-bit input tile that only the first stage reads: it needs tma_inputs=true and "
          "such an input (tma_inputs=" +
          std::string(s.tma_inputs ? "true" : "false") + ")");
    }
  }
  if (s.bn % 64 != 0)
    fail("tma_store=true with BN=" + std::to_string(s.bn) +
         ": the output tile leaves in boxes of 64 columns");
  const auto& outputs = plan.program.outputs();
  if (outputs.size() != 1) {
    fail("tma_store=true with " + std::to_string(outputs.size()) + " outputs: the staging buffer holds one");
  }
  const te::Tensor& out = outputs[0];
  if (te::dtype_bytes(out.dtype()) != 2 || out.shape().size() != 2) {
    fail("tma_store=true: output '" + out.name() + "' is not a 16-bit [M, N] tile");
  }
  if (plan.anchor.n % 8 != 0) {
    fail("tma_store=true with N=" + std::to_string(plan.anchor.n) +
         ": output rows must be 16-byte aligned for TMA (N a multiple of 8)");
  }
}

void check_legal(const FusionPlan& original, const Schedule& s, const TargetLimits& limits) {
  const std::string who = "schedule for '" + original.anchor.tensor.name() + "': ";
  auto fail = [&](const std::string& message) { throw CompileError(who + message); };
  if (s.one_pass_variance && !one_pass_variance_applies(original)) {
    fail(
        "one_pass_variance=true but no reduction is a sum of squared deviations from a row value of the "
        "stage before it");
  }
  if (s.fenced_exchange_arrive && !(original.has_reductions() && s.cluster_n > 1)) {
    fail("fenced_exchange_arrive=true without a cluster exchange of row partials (cluster_n=" +
         std::to_string(s.cluster_n) + (original.has_reductions() ? "" : ", no row reductions") + ")");
  }
  if (s.relaxed_exchange_wait && !(original.has_reductions() && s.cluster_n > 1)) {
    fail("relaxed_exchange_wait=true without a cluster exchange of row partials (cluster_n=" +
         std::to_string(s.cluster_n) + (original.has_reductions() ? "" : ", no row reductions") + ")");
  }
  if (s.global_exchange && !global_exchange_applies(original, s)) {
    fail(
        "global_exchange=true exchanges row partials between the CTAs of a row block on the persistent "
        "grid: it needs row reductions combined across cluster_n > 1 CTAs (reduction=cluster) and "
        "persistent=true (reduction=" +
        std::string(reduction_placement_name(s.reduction)) + ", cluster_n=" + std::to_string(s.cluster_n) +
        ", persistent=" + (s.persistent ? "true" : "false") + ")");
  }
  if (s.global_exchange && (s.fenced_exchange_arrive || s.relaxed_exchange_wait)) {
    fail(std::string(
             "fenced_exchange_arrive and relaxed_exchange_wait shape the exchange through "
             "distributed shared memory, which global_exchange=true replaces (fenced_exchange_arrive=") +
         (s.fenced_exchange_arrive ? "true" : "false") +
         ", relaxed_exchange_wait=" + (s.relaxed_exchange_wait ? "true" : "false") + ")");
  }
  if (s.online_softmax && !online_softmax_applies(original)) {
    fail(
        "online_softmax=true but no reduction is a sum of exp(x - m) over a tile computed alone in the stage "
        "after the row value m");
  }
  if (s.branchless_online_update && !s.online_softmax) {
    fail("branchless_online_update=true without online_softmax=true: it changes the online softmax's update");
  }
  const FusionPlan plan = effective_plan(original, s);
  if (s.carry_in_accumulator && !carry_in_accumulator_applies(original, s)) {
    fail(
        "carry_in_accumulator=true needs carried=registers and exactly one carried tile other than the "
        "anchor, but carried=" +
        std::string(value_home_name(s.carried)) + " and " + std::to_string(plan.carried_tiles.size()) +
        " carried tile(s)");
  }
  if (s.prefetch_inputs && !prefetch_inputs_apply(plan)) {
    fail("prefetch_inputs=true without an input read per element whose rows are 16-byte aligned (N=" +
         std::to_string(plan.anchor.n) + ")");
  }
  const Anchor& a = plan.anchor;
  if (s.bk != 64) fail("BK=" + std::to_string(s.bk) + " is not 64 (one 128-byte swizzle row of bf16)");
  if (s.bn < 16 || s.bn > 256 || s.bn % 16 != 0) {
    fail("BN=" + std::to_string(s.bn) + " is not a multiple of 16 in [16, 256]");
  }
  if (s.warp_roles == WarpRoles::kCooperative && s.bm != 64 && s.bm != 128) {
    fail("BM=" + std::to_string(s.bm) + " is neither 64 nor 128 (64 rows per consumer warpgroup)");
  }
  if (s.warp_roles == WarpRoles::kPingPong && s.bm != 64) {
    fail("BM=" + std::to_string(s.bm) +
         " with ping-pong warp roles: each warpgroup owns the same 64 rows, so BM=64");
  }
  if (s.stages < 2 || s.stages > 8) fail("stages=" + std::to_string(s.stages) + " is outside [2, 8]");
  if (s.cluster_n != 1 && s.cluster_n != 2 && s.cluster_n != 4 && s.cluster_n != 8) {
    fail("cluster_n=" + std::to_string(s.cluster_n) + " is not 1, 2, 4 or 8");
  }
  if (s.cluster_n > limits.max_cluster_size) {
    fail("cluster_n=" + std::to_string(s.cluster_n) + " exceeds the target's cluster limit " +
         std::to_string(limits.max_cluster_size));
  }
  if (s.raster_group_m < 1 || s.raster_group_m > 64) {
    fail("raster_group_m=" + std::to_string(s.raster_group_m) + " is outside [1, 64]");
  }
  if (a.k % 8 != 0) {
    fail("K=" + std::to_string(a.k) +
         " is not a multiple of 8: the operand rows must be 16-byte aligned for TMA");
  }
  if (!a.b_k_major) fail("operand '" + a.b.name() + "' is [K, N]: this code generator takes B as [N, K]");
  const std::int64_t n_tiles = ceil_div(a.n, s.bn);
  if (s.tma_store) check_tma_store(plan, s, fail);
  if (s.batched_reads && !batched_reads_apply(plan, s)) {
    fail("batched_reads=true without carried tiles re-read from a stash (carried=" +
         std::string(value_home_name(s.carried)) + ", " + std::to_string(plan.carried_tiles.size()) +
         " carried tiles)");
  }
  if (s.bf16_stash && !bf16_stash_applies(plan, s)) {
    fail("bf16_stash=true without carried tiles in a stash (carried=" +
         std::string(value_home_name(s.carried)) + ", " + std::to_string(plan.carried_tiles.size()) +
         " carried tiles)");
  }
  if (s.deep_reads && !s.batched_reads) {
    fail("deep_reads=true without batched_reads=true: deep_reads deepens the batched re-reads' chunks");
  }
  if (s.vector_loads && a.n % 2 != 0) {
    fail("vector_loads=true with N=" + std::to_string(a.n) +
         ": a thread's two neighbouring columns are loaded as one, so N must be even");
  }
  if (s.deferred() && !plan.has_reductions())
    fail("deferred reduction placement without row reductions: there is nothing to finish");
  if (plan.has_reductions()) {
    if (s.reduction == ReductionPlacement::kCluster && s.cluster_n == 1) {
      fail("cluster reduction placement with cluster_n=1: use placement 'cta' or a cluster of 2 or more");
    }
    if (s.reduction == ReductionPlacement::kCta && s.cluster_n != 1) {
      fail("CTA reduction placement with cluster_n=" + std::to_string(s.cluster_n) +
           ": clusters split rows' columns only with placement 'cluster'");
    }
    if (s.deferred()) {
      if (!deferrable(plan)) {
        fail("deferred reduction placement with " + std::to_string(plan.stages.size()) +
             " stages: the finish kernel runs the one stage after a single reduction barrier");
      }
      if (s.cluster_n != 1) {
        fail("deferred reduction placement with cluster_n=" + std::to_string(s.cluster_n) +
             ": each CTA writes its own tile's row partials, no cluster exchanges them");
      }
      if (!plan.carried_tiles.empty() && s.carried != ValueHome::kL2Stash) {
        fail("deferred reduction placement with carried=" + std::string(value_home_name(s.carried)) +
             ": the finish kernel re-reads carried tiles from the L2 stash");
      }
    }
    if (s.cluster_n > n_tiles) {
      fail("cluster_n=" + std::to_string(s.cluster_n) + " exceeds the " + std::to_string(n_tiles) +
           " column tiles of N=" + std::to_string(a.n) + " at BN=" + std::to_string(s.bn));
    }
  }
  if (!plan.carried_tiles.empty() && s.carried == ValueHome::kRegisters) {
    // Each consumer warpgroup keeps its own tiles.
    const std::int64_t held = tiles_per_warpgroup(plan, s);
    if (held > 1) {
      fail("carried tiles in registers need one column tile per consumer warpgroup, but N=" +
           std::to_string(a.n) + " at BN=" + std::to_string(s.bn) + " and cluster_n=" +
           std::to_string(s.cluster_n) + " gives " + std::to_string(held) + ": use carried=l2_stash");
    }
  }
  if (s.approximate_math && !approximate_math_applies(plan)) {
    fail("approximate_math=true but no element expression of the epilogue takes exp or tanh");
  }
  if (s.reciprocal_division && !reciprocal_division_applies(plan)) {
    fail("reciprocal_division=true but no element expression of the epilogue divides by a constant");
  }
  if (s.finish_row_split && !finish_row_split_applies(plan, s)) {
    fail("finish_row_split=true needs a deferred reduction over rows of at least " +
         std::to_string(kFinishSplit * kFinishStepColumns) + " columns (" + std::to_string(kFinishSplit) +
         " warps a row, " + std::to_string(kFinishStepColumns) + " columns a step), but reduction=" +
         std::string(reduction_placement_name(s.reduction)) + " and N=" + std::to_string(a.n));
  }
  if (s.stash_terms) {
    if (!s.online_softmax || !terms_stashable(plan)) {
      fail(std::string("stash_terms=true needs online_softmax=true on a softmax whose x is the one carried "
                       "tile, read after the reduction only by the terms exp(x - max) (online_softmax=") +
           (s.online_softmax ? "true" : "false") + ", " + std::to_string(plan.carried_tiles.size()) +
           " carried tile(s))");
    }
    if (!s.deferred()) {
      fail(
          "stash_terms=true needs reduction=deferred (the finish kernel rescales the terms), but reduction=" +
          std::string(reduction_placement_name(s.reduction)));
    }
    if (!stash_terms_fit(plan, s)) {
      fail("stash_terms=true with " + std::to_string(n_tiles) + " column tiles (N=" + std::to_string(a.n) +
           ", BN=" + std::to_string(s.bn) + "): the finish kernel's table of their factors holds at most " +
           std::to_string(kFinishScaleBytes / 4 / (kFinishThreads / 32)));
    }
  }
  if (s.stash_terms && s.bf16_stash) {
    fail("stash_terms=true with bf16_stash=true: the terms' stash is bf16 already; leave bf16_stash off");
  }
  if (s.wide_finish && !wide_finish_applies(plan, s)) {
    fail(
        "wide_finish=true needs reduction=deferred, N a multiple of 8 and 16-bit or f32 tiles and inputs "
        "along the rows (reduction=" +
        std::string(reduction_placement_name(s.reduction)) + ", N=" + std::to_string(a.n) + ")");
  }
  if (s.reverse_finish && !s.deferred()) {
    fail("reverse_finish=true orders a finish kernel's rows, which only reduction=deferred has (reduction=" +
         std::string(reduction_placement_name(s.reduction)) + ")");
  }
  if (s.persistent_finish && !s.deferred()) {
    fail(
        "persistent_finish=true runs a finish kernel's CTAs over its rows, which only reduction=deferred has "
        "(reduction=" +
        std::string(reduction_placement_name(s.reduction)) + ")");
  }
  if (s.early_handoff && s.warp_roles != WarpRoles::kPingPong) {
    fail(std::string("early_handoff=true hands the mainloop from one ping-pong warpgroup to the other, which "
                     "only warp_roles=ping_pong has (warp_roles=") +
         std::string(warp_roles_name(s.warp_roles)) + ")");
  }
  if (s.one_input_slot && !one_input_slot_applies(plan, s)) {
    fail(std::string("one_input_slot=true needs tma_inputs=true and either reduction=deferred, or row "
                     "reductions combined in the kernel whose staged inputs only the first stage reads "
                     "(unstaged_vectors=true or resident_vectors=true leaves out the vectors later stages "
                     "read) and no output stored over the slot (tma_inputs=") +
         (s.tma_inputs ? "true" : "false") +
         ", reduction=" + std::string(reduction_placement_name(s.reduction)) + ", staged inputs read after " +
         "the first stage=" + (staged_reads_end_in_first_stage(plan, s) ? "no" : "yes") +
         ", output stored in place=" + (s.stores_in_place() ? "yes" : "no") + ")");
  }
  if (s.staged_pairs && !staged_pairs_applies(s)) {
    fail(std::string("staged_pairs=true reads staged inputs in pairs, which needs tma_inputs=true and "
                     "vector_loads=true (tma_inputs=") +
         (s.tma_inputs ? "true" : "false") + ", vector_loads=" + (s.vector_loads ? "true" : "false") + ")");
  }
  if (s.box_reads && !box_reads_applies(s)) {
    fail(std::string("box_reads=true loads a box's staged pairs ahead of its elements, which needs "
                     "staged_pairs=true (staged_pairs=false, tma_inputs=") +
         (s.tma_inputs ? "true" : "false") + ")");
  }
  if (s.stash_in_slot && !stash_in_slot_applies(plan, s)) {
    fail(std::string(
             "stash_in_slot=true writes a deferred reduction's stash over a staged input tile and stores "
             "it by TMA from there: it needs reduction=deferred, tma_store=true, and tma_inputs=true "
             "staging a 16-bit input tile that no stage after the first reads (reduction=") +
         std::string(reduction_placement_name(s.reduction)) + ", tma_store=" +
         (s.tma_store ? "true" : "false") + ", tma_inputs=" + (s.tma_inputs ? "true" : "false") + ")");
  }
  if (s.stash_evict_last && !stash_evict_last_applies(plan, s)) {
    fail(
        "stash_evict_last=true needs reduction=deferred with a stash in L2 stored element-wise or by TMA "
        "from the staged slot (carried=" +
        std::string(value_home_name(s.carried)) +
        ", reduction=" + std::string(reduction_placement_name(s.reduction)) + ", " +
        std::to_string(plan.carried_tiles.size()) + " carried tiles, tma_store=" +
        (s.tma_store ? "true" : "false") + ", stash_in_slot=" + (s.stash_in_slot ? "true" : "false") + ")");
  }
  if (s.streaming_hints && !streaming_hints_apply(s)) {
    fail(std::string("streaming_hints=true marks the finish kernel's wide loads of a 16-bit stash and its "
                     "stores as streaming: it needs reduction=deferred, wide_finish=true and bf16_stash=true "
                     "or stash_terms=true (reduction=") +
         std::string(reduction_placement_name(s.reduction)) + ", wide_finish=" +
         (s.wide_finish ? "true" : "false") + ", stash " + std::string(te::dtype_name(stash_dtype(s))) + ")");
  }
  if (s.finish_reductions && !finish_reductions_apply(plan, s)) {
    fail(std::string("finish_reductions=true has the finish kernel reduce each row from the stash: it needs "
                     "reduction=deferred without online_softmax, stash_terms or finish_row_split, and "
                     "first-stage reductions that read only carried tiles and inputs (reduction=") +
         std::string(reduction_placement_name(s.reduction)) + ", online_softmax=" +
         (s.online_softmax ? "true" : "false") + ", stash_terms=" + (s.stash_terms ? "true" : "false") +
         ", finish_row_split=" + (s.finish_row_split ? "true" : "false") + ")");
  }
  if (s.store_chunks && !store_chunks_applies(s)) {
    fail(
        "store_chunks=true needs tma_store=true, BN of three 64-column boxes or more (with two boxes the "
        "whole tile is two boxes already) and the output not stored over a staged input (tma_store=" +
        std::string(s.tma_store ? "true" : "false") + ", BN=" + std::to_string(s.bn) +
        ", stored in place=" + (s.stores_in_place() ? "true" : "false") + ")");
  }
  if (s.multicast_b && !multicast_b_applies(plan, s)) {
    fail(
        "multicast_b=true needs CTAs that take tiles without combining rows across a cluster (no row "
        "reductions, or placement 'deferred'), but reduction=" +
        std::string(reduction_placement_name(s.reduction)) + " and cluster_n=" + std::to_string(s.cluster_n));
  }
  if (s.multicast_b && limits.max_cluster_size < 2) {
    fail("multicast_b=true needs clusters of 2, but the target's cluster limit is " +
         std::to_string(limits.max_cluster_size));
  }
  if (s.tma_inputs && !tma_inputs_apply(plan, s)) {
    fail(
        "tma_inputs=true needs row reductions, carried=registers with one column tile per consumer "
        "warpgroup or a deferred reduction, a 16-bit input read per element or per column, and N a multiple "
        "of 8 (N=" +
        std::to_string(a.n) + ", carried=" + std::string(value_home_name(s.carried)) + ", " +
        std::to_string(tiles_per_warpgroup(plan, s)) + " tile(s) per warpgroup)");
  }
  if (s.resident_vectors && !resident_vectors_apply(plan, s)) {
    fail(
        "resident_vectors=true loads the per-column vectors once for the kernel: it needs tma_inputs=true, "
        "row reductions combined in the kernel, one column tile a CTA (N <= BN x cluster_n), a staged "
        "per-column vector and unstaged_vectors=false (tma_inputs=" +
        std::string(s.tma_inputs ? "true" : "false") +
        ", reduction=" + std::string(reduction_placement_name(s.reduction)) + ", N=" + std::to_string(a.n) +
        ", BN=" + std::to_string(s.bn) + ", cluster_n=" + std::to_string(s.cluster_n) +
        ", unstaged_vectors=" + (s.unstaged_vectors ? "true" : "false") + ")");
  }
  if (s.unstaged_vectors && !unstaged_vectors_apply(plan, s)) {
    fail(std::string("unstaged_vectors=true leaves the per-column vectors out of the staged slot: it needs "
                     "tma_inputs=true and 16-bit inputs read both per element and per column (tma_inputs=") +
         (s.tma_inputs ? "true" : "false") + ")");
  }
  const int registers = accumulator_registers(plan, s);
  if (registers > limits.registers_per_consumer_thread - 64) {
    fail(std::to_string(registers) + " accumulator registers per thread (BN=" + std::to_string(s.bn) + ", " +
         std::to_string(plan.carried_tiles.size()) + " carried tiles) leave too few of the " +
         std::to_string(limits.registers_per_consumer_thread) + " for the epilogue");
  }
  const std::int64_t stash_bytes = shared_stash_bytes(plan, s);
  const std::int64_t staged_bytes = staged_input_bytes(plan, s);
  const std::int64_t shared_bytes =
      s.shared_memory_bytes(row_reductions_per_stage(plan)) + stash_bytes + staged_bytes;
  if (shared_bytes > limits.max_shared_memory_per_block) {
    fail(std::to_string(shared_bytes) + " bytes of shared memory (stages=" + std::to_string(s.stages) +
         ", BM=" + std::to_string(s.bm) + ", BN=" + std::to_string(s.bn) +
         (stash_bytes > 0 ? ", carried tiles " + std::to_string(stash_bytes) : std::string()) +
         (staged_bytes > 0 ? ", staged inputs " + std::to_string(staged_bytes) : std::string()) +
         ") exceed the target's " + std::to_string(limits.max_shared_memory_per_block));
  }
}

Schedule default_schedule(const FusionPlan& plan, const TargetLimits& limits) {
  Schedule s;
  const Anchor& a = plan.anchor;
  if (!plan.has_reductions()) {
    s.bm = 128;
    s.bn = a.n >= 256 ? 256 : 128;
    s.stages = 4;
  } else {
    s.bn = 128;
    const std::int64_t n_tiles = ceil_div(a.n, s.bn);
    // Best: a cluster covers whole rows with one tile per CTA, so that values needed after a reduction stay
    // in registers and nothing is stashed. Take the smallest cluster whose tile width is at most 128 columns.
    std::optional<Schedule> one_tile;
    for (int cluster = 1; cluster <= limits.max_cluster_size && !one_tile; cluster *= 2) {
      Schedule candidate = s;
      candidate.bm = 128;
      candidate.cluster_n = cluster;
      candidate.bn = static_cast<int>(ceil_div(ceil_div(a.n, cluster), 16) * 16);
      candidate.reduction = cluster > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta;
      candidate.carried = ValueHome::kRegisters;
      if (candidate.bn > 128 || ceil_div(a.n, candidate.bn) != cluster) continue;
      try {
        check_legal(plan, candidate, limits);
        one_tile = candidate;
      } catch (const CompileError&) {
      }
    }
    if (one_tile) {
      s = *one_tile;
    } else {
      // Otherwise each CTA loops over its columns and stashes. Two ping-pong warpgroups take alternate column
      // tiles of the same 64 rows, so that one tile's memory stages run under the next tile's mainloop
      // (1.5-2.4x over cooperative on the H200, benchmarks/NOTES.md). Spread rows over a cluster when there
      // are few row blocks, to fill the SMs.
      s.bm = 64;
      s.warp_roles = WarpRoles::kPingPong;
      const std::int64_t row_blocks = ceil_div(a.m, s.bm);
      const std::int64_t max_cluster = std::min<std::int64_t>({n_tiles, 8, limits.max_cluster_size});
      while (row_blocks * s.cluster_n < 132 && s.cluster_n * 2 <= max_cluster) s.cluster_n *= 2;
      s.reduction = s.cluster_n > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta;
      s.carried = ValueHome::kL2Stash;
    }
    s.stages = 4;
  }
  const int row_reductions = row_reductions_per_stage(plan);
  while (s.shared_memory_bytes(row_reductions) > limits.max_shared_memory_per_block && s.stages > 2)
    --s.stages;
  check_legal(plan, s, limits);
  return s;
}

}  // namespace comfuse::schedule
