// multicast_b: the launch (clusters of two over pairs of row blocks), the half B box, the loads into both
// CTAs, the stage released in both, the producer's wait for the last releases, and the tile walk over the
// pairs (tile_mapping.cc).
#include <gtest/gtest.h>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;
using source_text::contains;
using test_programs::kKey;
using test_programs::plan_of;

Schedule multicast(int bm, int bn, WarpRoles roles) {
  Schedule s;
  s.bm = bm;
  s.bn = bn;
  s.warp_roles = roles;
  s.multicast_b = true;
  return s;
}

int b_box_rows(const KernelSource& kernel) {
  for (const KernelParam& p : kernel.params) {
    if (p.kind == KernelParam::Kind::kTmaB) return p.box_rows;
  }
  ADD_FAILURE() << "no B descriptor";
  return -1;
}

TEST(Multicast, LaunchesClustersOfTwoOverPairsOfRowBlocks) {
  // M = 900 at BM = 64: 15 row blocks, so 8 pairs (the last block taken by both CTAs of its pair).
  const FusionPlan gemm = plan_of("gemm", 900, 1024, 1000);
  const KernelSource one_tile = emit_kernel(gemm, multicast(64, 128, WarpRoles::kCooperative), kKey);
  EXPECT_EQ(one_tile.launch.cluster_x, 2);
  EXPECT_EQ(one_tile.launch.grid_x, 16 * 8);  // 16 row blocks' CTAs x 8 column tiles
  EXPECT_EQ(b_box_rows(one_tile), 64);        // half of BN
  const KernelSource ping_pong = emit_kernel(gemm, multicast(64, 128, WarpRoles::kPingPong), kKey);
  EXPECT_EQ(ping_pong.launch.grid_x, 16 * 4);  // pairs of column tiles
  Schedule persistent = multicast(128, 256, WarpRoles::kCooperative);
  persistent.persistent = true;
  const KernelSource strided = emit_kernel(gemm, persistent, kKey);
  EXPECT_TRUE(strided.launch.persistent);
  EXPECT_EQ(strided.launch.grid_x, 8 * 4);  // 8 row blocks of 128 (even) x 4 column tiles
  EXPECT_EQ(b_box_rows(strided), 128);
  // Without the knob: no cluster, the whole B box.
  const KernelSource plain = emit_kernel(gemm, Schedule{}, kKey);
  EXPECT_EQ(plain.launch.cluster_x, 1);
  EXPECT_EQ(b_box_rows(plain), 0);  // the launch's default: BN rows
}

TEST(Multicast, EachProducerLoadsHalfOfBIntoBothCtas) {
  const KernelSource kernel =
      emit_kernel(plan_of("gemm", 900, 1024, 1000), multicast(64, 128, WarpRoles::kPingPong), kKey);
  const std::string& src = kernel.source;
  EXPECT_TRUE(contains(src, "const u32 cta_rank = cluster_rank();"));
  EXPECT_TRUE(contains(src, "tma_load_2d(sA + s * BM * BK, &tma_a, &full[s], kb * BK, tiles.m_block * BM);"));
  EXPECT_TRUE(contains(src,
                       "tma_load_2d_multicast(sB + s * BN * BK + cta_rank * (BN / 2) * BK, &tma_b, "
                       "&full[s], kb * BK, tiles.n_tile(t) * BN + cta_rank * (BN / 2), 3);"));
  EXPECT_FALSE(contains(src, "tma_load_2d(sB"));
  // Each CTA's full barrier still waits for the whole stage: its A and both halves of B.
  EXPECT_TRUE(contains(src, "mbar_expect_tx(&full[s], STAGE_BYTES);"));
}

TEST(Multicast, AStageIsReleasedInBothCtasAndTheProducerWaitsForTheLastReleases) {
  for (WarpRoles roles : {WarpRoles::kCooperative, WarpRoles::kPingPong}) {
    const KernelSource kernel = emit_kernel(plan_of("gemm", 256, 512, 512), multicast(64, 128, roles), kKey);
    const std::string& src = kernel.source;
    const std::string consumers = roles == WarpRoles::kPingPong ? "1" : "CONSUMERS";
    EXPECT_TRUE(contains(src, "mbar_init(&empty[s], 2 * " + consumers + ");")) << consumers;
    EXPECT_TRUE(contains(
        src,
        "if (kb > 0 && (threadIdx.x & 127) == 0) release_stage(&empty[(it - 1) % STAGES], cta_rank ^ 1);"));
    EXPECT_TRUE(
        contains(src, "release_stage(&empty[(t * K_BLOCKS + K_BLOCKS - 1) % STAGES], cta_rank ^ 1);"));
    EXPECT_FALSE(contains(src, "mbar_arrive(&empty["));
    EXPECT_TRUE(contains(src, "mbarrier.arrive.shared::cluster.b64 _, [%0];\" :: \"r\"(map_to_rank(bar, peer))"));
    EXPECT_TRUE(
        contains(src,
                 "for (int it = tiles.count * K_BLOCKS; it < tiles.count * K_BLOCKS + STAGES; ++it) {\n"
                 "        mbar_wait(&empty[it % STAGES], ((it / STAGES) & 1) ^ 1);"));
  }
}

TEST(Multicast, TheCtasOfAClusterTakeNeighbouringRowBlocksOfTheSameColumnTiles) {
  const FusionPlan gemm = plan_of("gemm", 900, 1024, 1000);
  const std::string one_tile = emit_kernel(gemm, multicast(64, 128, WarpRoles::kCooperative), kKey).source;
  EXPECT_TRUE(contains(one_tile, "constexpr int M_PAIRS = (M_BLOCKS + 1) / 2;"));
  EXPECT_TRUE(contains(one_tile, "const int group_size = min(M_PAIRS - first_m, GROUP_M);"));
  EXPECT_TRUE(contains(one_tile, "raster(blockIdx.x / 2, N_TILES, row_pair, n_tile);"));
  EXPECT_TRUE(contains(one_tile, "seq.m_block = min(2 * row_pair + (int)cta_rank, M_BLOCKS - 1);"));
  const std::string ping_pong = emit_kernel(gemm, multicast(64, 128, WarpRoles::kPingPong), kKey).source;
  EXPECT_TRUE(contains(ping_pong, "raster(blockIdx.x / 2, (N_TILES + 1) / 2, row_pair, pair);"));
  Schedule persistent = multicast(64, 128, WarpRoles::kPingPong);
  persistent.persistent = true;
  const std::string strided = emit_kernel(gemm, persistent, kKey).source;
  EXPECT_TRUE(contains(strided, "seq.first_tile = blockIdx.x / 2;"));
  EXPECT_TRUE(contains(strided, "seq.stride = gridDim.x / 2;"));
  EXPECT_TRUE(
      contains(strided, "seq.count = (M_PAIRS * N_TILES - seq.first_tile + seq.stride - 1) / seq.stride;"));
  EXPECT_TRUE(contains(strided, "m_block = min(2 * row_pair + rank, M_BLOCKS - 1);"));
  // Without the knob the walk is over row blocks, a CTA at a time.
  const std::string plain = emit_kernel(gemm, Schedule{}, kKey).source;
  EXPECT_FALSE(contains(plain, "M_PAIRS"));
  EXPECT_TRUE(contains(plain, "raster(blockIdx.x, N_TILES, seq.m_block, n_tile);"));
}

TEST(Multicast, ADeferredReductionsRowsAreWrittenByEveryCta) {
  // The main kernel's CTAs own different rows: none defers its row outputs to cluster rank 0.
  Schedule s = multicast(64, 256, WarpRoles::kPingPong);
  s.reduction = ReductionPlacement::kDeferred;
  s.carried = ValueHome::kL2Stash;
  s.online_softmax = true;
  const KernelSource kernel = emit_kernel(plan_of("gemm_softmax", 256, 128, 2048), s, kKey);
  EXPECT_EQ(kernel.launch.cluster_x, 2);
  EXPECT_FALSE(kernel.finish_name.empty());
  EXPECT_TRUE(contains(kernel.source, "const bool row_writer = (lane & 3) == 0 && consumer == 0;"));
  EXPECT_FALSE(contains(kernel.source, "cta_rank == 0"));
}

}  // namespace
}  // namespace comfuse::codegen
