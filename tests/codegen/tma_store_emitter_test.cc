// The TMA-store epilogue's two layouts added after the whole-tile one (kernel_emitter_test.cc): the tile in
// two 64-column boxes stored as they fill (store_chunks), and the output of rows combined in the kernel
// written over the staged residual's slot and stored from there.
#include <gtest/gtest.h>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::Schedule;
using schedule::WarpRoles;
using source_text::contains;
using source_text::count;
using test_programs::kKey;
using test_programs::plan_of;

TEST(TmaStoreEmitter, StoreChunksStagesTwoBoxesAndStoresEachOnceFilled) {
  const FusionPlan gemm = plan_of("gemm_bias_relu", 1000, 1024, 1000);
  Schedule whole;
  whole.tma_store = true;
  whole.bn = 256;
  whole.stages = 3;
  Schedule chunks = whole;
  chunks.store_chunks = true;
  const KernelSource kernel = emit_kernel(gemm, chunks, kKey);
  // Two warpgroups' two 64 x 64 boxes instead of their 64 x 256 tiles: 64 KB less.
  EXPECT_EQ(kernel.launch.shared_bytes,
            emit_kernel(gemm, whole, kKey).launch.shared_bytes - 2 * 64 * 128 * 2);
  EXPECT_TRUE(contains(kernel.source, "const int buffer = (col >> 6) & 1, byte = (col & 63) * 2;"));
  EXPECT_TRUE(contains(kernel.source, "u16* stage_out = sOut + consumer * 64 * 128;"));
  // In the element loop: box i / 32 waits for the store of box i / 32 - 2, and is stored once whole.
  EXPECT_TRUE(contains(kernel.source,
                       "if ((i & 31) == 0 && i >= 64) {\n"
                       "        // Box i / 32 goes into the buffer of box i / 32 - 2: once that box's store "
                       "has read it.\n"
                       "        if (store_leader) bulk_wait_read_all_but_one();\n"
                       "        warpgroup_sync(consumer);"));
  EXPECT_EQ(count(kernel.source, "if ((i & 31) == 31) {"), 1);
  EXPECT_TRUE(
      contains(kernel.source,
               "tma_store_2d(&tma_out, stage_out + ((i >> 5) & 1) * 64 * 64, n0 + 64 * (i >> 5), m0 + "
               "a_row0);"));
  // Not after the loop as well; a tile still starts once the last tile's stores have read their boxes.
  EXPECT_FALSE(contains(kernel.source, "for (int b = 0; b < BN / 64; ++b)"));
  EXPECT_TRUE(
      contains(kernel.source, "if (store_leader) bulk_wait_read_all();\n    warpgroup_sync(consumer);"));
  // With interior tiles, both copies of the loop store their boxes.
  Schedule interior = chunks;
  interior.interior_tiles = true;
  EXPECT_EQ(count(emit_kernel(gemm, interior, kKey).source, "if ((i & 31) == 31) {"), 2);
  // A deferred reduction's bf16 stash leaves the same way, through its own descriptor.
  const FusionPlan ln = plan_of("post_layernorm", 1000, 1024, 1024);
  Schedule deferred = test_programs::deferred_ping_pong();
  deferred.bn = 256;
  deferred.stages = 3;
  deferred.bf16_stash = deferred.tma_store = deferred.store_chunks = deferred.one_pass_variance = true;
  EXPECT_TRUE(contains(emit_kernel(ln, deferred, kKey).source,
                       "tma_store_2d(&tma_stash, stage_out + ((i >> 5) & 1) * 64 * 64, n0 + 64 * (i >> 5), "
                       "m0 + a_row0);"));
  // Without the knob the kernel is the one logged before it.
  EXPECT_FALSE(contains(emit_kernel(gemm, whole, kKey).source, "bulk_wait_read_all_but_one"));
}

TEST(TmaStoreEmitter, StoreChunksTakesASoftmaxsStashedTermsABoxAtATime) {
  const FusionPlan softmax = plan_of("gemm_softmax", 1000, 1024, 1024);
  Schedule whole;
  whole.bm = 128;
  whole.bn = 256;
  whole.stages = 3;
  whole.reduction = schedule::ReductionPlacement::kDeferred;
  whole.carried = schedule::ValueHome::kL2Stash;
  whole.online_softmax = whole.stash_terms = whole.tma_store = true;
  Schedule chunks = whole;
  chunks.store_chunks = true;
  const std::string source = emit_kernel(softmax, chunks, kKey).source;
  // The element loop takes the maximum alone and stores nothing; the terms' pass after it stores each box as
  // it fills, once the box two before has been read, and the whole-tile store after the pass is gone.
  EXPECT_EQ(count(source, "if ((i & 31) == 0 && i >= 64) {"), 1);
  EXPECT_EQ(count(source, "if ((i & 31) == 31) {"), 1);
  EXPECT_LT(source.find("float m = "), source.find("if ((i & 31) == 0 && i >= 64) {"));
  EXPECT_TRUE(contains(source,
                       "tma_store_2d(&tma_stash, stage_out + ((i >> 5) & 1) * 64 * 64, n0 + 64 * (i >> 5), "
                       "m0 + a_row0);"));
  EXPECT_FALSE(contains(source, "for (int b = 0; b < BN / 64; ++b)"));
  EXPECT_TRUE(contains(source, "each stored by TMA as it fills (store_chunks)"));
  // Without the knob, the terms fill the whole staging tile and leave after the pass.
  const std::string before = emit_kernel(softmax, whole, kKey).source;
  EXPECT_FALSE(contains(before, "bulk_wait_read_all_but_one"));
  EXPECT_TRUE(contains(before, "for (int b = 0; b < BN / 64; ++b)"));
}

TEST(TmaStoreEmitter, AnOutputOfRowsCombinedInTheKernelLeavesFromTheStagedResidualsSlot) {
  const FusionPlan ln = plan_of("post_layernorm", 1000, 1024, 1024);
  Schedule staged;
  staged.bm = 64;
  staged.bn = 256;
  staged.stages = 3;
  staged.warp_roles = WarpRoles::kPingPong;
  staged.cluster_n = 4;
  staged.reduction = schedule::ReductionPlacement::kCluster;
  staged.persistent = staged.one_pass_variance = staged.carry_in_accumulator = staged.tma_inputs = true;
  Schedule stored = staged;
  stored.tma_store = true;
  const KernelSource kernel = emit_kernel(ln, stored, kKey);
  // No staging memory of its own.
  EXPECT_EQ(kernel.launch.shared_bytes, emit_kernel(ln, staged, kKey).launch.shared_bytes);
  EXPECT_FALSE(contains(kernel.source, "sOut"));
  EXPECT_FALSE(contains(kernel.source, "stage_out"));
  // The pair over the residual's pair (the residual's boxes start 1024 bytes into the slot, after the bias).
  EXPECT_TRUE(
      contains(kernel.source,
               "else sts_u32(in_tile + 1024 + ((i >> 5) * BM + local_row0 + 8 * h) * 128 + ((((i >> 2) & "
               "7) ^ (lane >> 2)) << 4) + (lane & 3) * 4, (u32)pend_Y | ((u32)f32_to_bf16(v_Y) << 16));"));
  EXPECT_FALSE(contains(kernel.source, "out_Y[(size_t)"));
  EXPECT_TRUE(
      contains(kernel.source,
               "tma_store_2d(&tma_out, sIn + in_slot * IN_SLOT_BYTES + 1024 + ((i >> 5) * BM + a_row0) * "
               "128, n0 + 64 * (i >> 5), m0 + a_row0);"));
  // The slot is released once the stores have read it; the kernel ends once they are done.
  EXPECT_TRUE(contains(kernel.source,
                       "if (store_leader) bulk_wait_read_all();\n"
                       "      warpgroup_sync(consumer);\n"
                       "      __syncwarp();\n"
                       "      if (lane == 0) mbar_arrive(&in_empty[in_slot]);"));
  EXPECT_EQ(count(kernel.source, "if (store_leader) bulk_wait_all();"), 1);
  // The residual is read in the first stage only: the stage after the barrier reads gamma and beta.
  EXPECT_EQ(schedule::in_place_store_input(schedule::effective_plan(ln, stored), stored)->tensor.name(), "R");
}

}  // namespace
}  // namespace comfuse::codegen
