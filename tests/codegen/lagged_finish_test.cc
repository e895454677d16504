// lagged_finish: a deferred reduction's later stage in the main kernel, each warpgroup running its previous
// tile's after the next tile's stage 0, behind a per-row-group counter; and the launch's refusal of a grid
// too small for its waits.
#include <gtest/gtest.h>

#include "codegen/fused_kernel.h"
#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using source_text::contains;
using test_programs::kKey;
using test_programs::plan_of;

// Cooperative 128 x 128 tiles on the persistent grid, a layer norm's variance in one pass, lagged.
Schedule lagged_layer_norm() {
  Schedule s;
  s.carried = ValueHome::kL2Stash;
  s.reduction = ReductionPlacement::kDeferred;
  s.one_pass_variance = s.persistent = s.lagged_finish = true;
  return s;
}

TEST(LaggedFinish, TheLaterStageRunsInTheMainKernelATileBehind) {
  const FusionPlan ln = plan_of("post_layernorm", 77, 72, 1000);
  const KernelSource k = emit_kernel(ln, lagged_layer_norm(), kKey);
  // No finish kernel; the grid must hold a row block's 8 column tiles (one row block: a window of 8).
  EXPECT_TRUE(k.finish_name.empty());
  EXPECT_EQ(k.launch.finish_grid_x, 0);
  EXPECT_FALSE(contains(k.source, "_finish("));
  EXPECT_EQ(k.launch.lag_window, 8);
  EXPECT_TRUE(k.launch.persistent);
  // The workspace: the f32 stash, the partials of 4 floats x 8 column tiles x 77 rows, then two counters for
  // each of the two warpgroups' 64 rows of the one row block.
  const std::int64_t parts = 77 * 1000 * 4 + 4 * 4 * 8 * 77;
  EXPECT_EQ(k.stash_bytes, parts + 4 * 2 * 2);
  EXPECT_TRUE(contains(k.source, "constexpr size_t COUNTERS_BYTE = " + std::to_string(parts) +
                                     ", ROW_GROUPS = 2;"));
  // One more turn than tiles; each tile counted in its warpgroup's row group, then the previous tile's later
  // stage after the wait for its group.
  EXPECT_TRUE(contains(k.source, "for (int t = 0; t < tiles.count + 1; ++t)"));
  EXPECT_TRUE(contains(k.source, "lag_arrive(&arrived[(m0 + a_row0) / 64], consumer);"));
  EXPECT_TRUE(contains(k.source, "const int m0 = lag_m0, n0 = lag_n0;"));
  EXPECT_TRUE(contains(k.source,
                       "lag_wait(&arrived[(m0 + a_row0) / 64], &finished[(m0 + a_row0) / 64], N_TILES, consumer);"));
  // A quad's lanes take every fourth column tile's partials from L2, then the quad combines them.
  EXPECT_TRUE(contains(k.source, "for (int t = lane & 3; t < N_TILES; t += 4)"));
  EXPECT_TRUE(contains(k.source, "v = v + __ldcg(&parts[((size_t)0 * N_TILES + t) * M + prow]);"));
  EXPECT_TRUE(contains(k.source, "red0_0[h] = __shfl_sync(0xffffffffu, v, lane & ~3);"));
  // The later stage re-reads the stash in the fragment's own layout, and only the first column tile writes
  // row values.
  EXPECT_TRUE(contains(k.source, "// ---- stage 1 ----"));
  EXPECT_TRUE(contains(k.source, "stash[((size_t)0 * M + grow) * N + gcol]"));
  EXPECT_TRUE(contains(k.source, "const bool row_writer = (lane & 3) == 0 && n0 == 0;"));
  // The counters reset themselves: the last wait of a group zeroes both.
  EXPECT_TRUE(contains(k.source, "if (atomicAdd(finished, 1) == tiles - 1)"));
}

TEST(LaggedFinish, PingPongWarpgroupsEachLagTheirOwnTiles) {
  Schedule s = test_programs::deferred_ping_pong();
  s.online_softmax = s.persistent = s.lagged_finish = true;
  const KernelSource k = emit_kernel(plan_of("gemm_softmax", 127, 72, 1000), s, kKey);
  EXPECT_TRUE(k.finish_name.empty());
  // Two turns more than tiles, so that each warpgroup's last tile has one of its own after it.
  EXPECT_TRUE(contains(k.source, "for (int t = 0; t < tiles.count + 2; ++t)"));
  EXPECT_TRUE(contains(k.source, "if ((t & 1) != consumer) continue;  // ping-pong: alternate tiles"));
  // Two row blocks of 64, 8 column tiles: a window of 7 x 2 + 1; a counter pair per row block.
  EXPECT_EQ(k.launch.lag_window, 15);
  EXPECT_TRUE(contains(k.source, ", ROW_GROUPS = 4;"));
}

TEST(LaggedFinish, StagedInputsAreStageZerosOnly) {
  // With tma_inputs the producer stages the tile's residual for stage 0; the lagging tile's later stage
  // reads its own inputs from global memory, as the finish kernel would.
  Schedule s = lagged_layer_norm();
  s.tma_inputs = s.bf16_stash = true;
  const KernelSource k = emit_kernel(plan_of("post_layernorm", 256, 128, 512), s, kKey);
  const std::string later = k.source.substr(k.source.find("const int m0 = lag_m0, n0 = lag_n0;"));
  EXPECT_TRUE(contains(later, "in_gamma[gcol]"));
  EXPECT_TRUE(contains(k.source, "lds_u16(in_tile + "));  // stage 0 reads the staged tile
  EXPECT_FALSE(contains(later, "lds_u16(in_tile + "));
}

TEST(LaggedFinish, TheLaunchRefusesAGridSmallerThanTheWindow) {
  KernelSource k;
  k.name = "comfuse_mm_lagged";
  k.launch.lag_window = 121;
  EXPECT_NO_THROW(check_lag_window(k, 132));
  EXPECT_NO_THROW(check_lag_window(k, 121));
  try {
    check_lag_window(k, 120);
    FAIL() << "a grid of 120 CTAs for a window of 121 was not refused";
  } catch (const CompileError& error) {
    EXPECT_EQ(std::string(error.what()),
              "kernel 'comfuse_mm_lagged' (lagged_finish) needs a persistent grid of at least 121 CTAs, a row "
              "block's column tiles in the grid's order, but this device runs 120 at once: its CTAs could "
              "wait on each other");
  }
  k.launch.lag_window = 0;  // not lagged: any grid
  EXPECT_NO_THROW(check_lag_window(k, 1));
}

TEST(LaggedFinish, TheWindowIsARowBlocksSpanInTheRasterisedOrder) {
  // post-LN at the suite's M8192 K4096 N4096, 128 x 256 tiles: 16 column tiles, row blocks 8 at a time.
  Schedule s = lagged_layer_norm();
  s.bn = 256;
  const FusionPlan suite = plan_of("post_layernorm", 8192, 64, 4096);
  EXPECT_EQ(schedule::lag_window(suite, s), 15 * 8 + 1);
  s.raster_group_m = 1;
  EXPECT_EQ(schedule::lag_window(suite, s), 16);
  EXPECT_EQ(emit_kernel(suite, s, kKey).launch.lag_window, 16);
}

}  // namespace
}  // namespace comfuse::codegen
