// The kernels' staged inputs as emitted (tma_inputs and the knobs built on it in the kernel): what the slot
// holds, when the producer fills it and the consumers release it, and the vectors kept for the whole kernel.
// (The slots' barrier protocol itself is model-checked in staged_inputs_test.cc.)
#include <gtest/gtest.h>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::Schedule;
using schedule::ValueHome;
using source_text::contains;
using test_programs::cluster_schedule;
using test_programs::kKey;
using test_programs::param_names;
using test_programs::plan_of;

TEST(StagedInputsKernel, TmaInputsStagesTheResidualAndVectorsInSharedMemory) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1000);
  Schedule s = cluster_schedule(128, 128, 8, ValueHome::kRegisters);
  s.tma_inputs = true;
  const KernelSource kernel = emit_kernel(ln, s, kKey);
  // A map per staged input: the residual in boxes of BM rows, the vectors as one row.
  EXPECT_EQ(param_names(kernel), (std::vector<std::string>{"tma_a:X", "tma_b:W", "in:b", "in:R", "in:gamma",
                                                           "in:beta", "out:Y", "tma_in:b/1", "tma_in:R/128",
                                                           "tma_in:gamma/1", "tma_in:beta/1", "stash"}));
  const std::string& source = kernel.source;
  // Two slots of 1024 + 32768 + 1024 + 1024 bytes; the TMA writes 4 x 256 bytes of vectors and 32768 of R.
  EXPECT_TRUE(contains(source, "constexpr u32 IN_SLOT_BYTES = 35840, IN_TX_BYTES = 33536, IN_BOXES = 2;"));
  EXPECT_EQ(kernel.launch.shared_bytes,
            emit_kernel(ln, cluster_schedule(128, 128, 8, ValueHome::kRegisters), kKey).launch.shared_bytes +
                2 * 35840 + 32);
  // The producer fills the slot before the tile's K blocks; the consumers wait after the mainloop and
  // release after the last stage.
  const std::size_t produce = source.find("mbar_expect_tx(&in_full[slot], IN_TX_BYTES);");
  ASSERT_NE(produce, std::string::npos);
  EXPECT_LT(produce, source.find("for (int kb = 0; kb < K_BLOCKS; ++kb)", source.find("regs_decrease<")));
  EXPECT_TRUE(contains(source,
                       "tma_load_2d(dst + 1024 + b * BM * 128, &tma_in_R, &in_full[slot], "
                       "tiles.n_tile(t) * BN + 64 * b, tiles.m_block * BM);"));
  const std::size_t wait = source.find("mbar_wait(&in_full[in_slot], (t >> 1) & 1);");
  const std::size_t read_r =
      source.find("lds_u16(in_tile + 1024 + ((i >> 5) * BM + local_row0 + 8 * h) * 128");
  const std::size_t read_gamma = source.find("lds_u16(in_tile + 34816 + (i >> 5) * 128");
  const std::size_t release = source.find("if (lane == 0) mbar_arrive(&in_empty[in_slot]);");
  ASSERT_NE(wait, std::string::npos);
  ASSERT_NE(read_r, std::string::npos);
  ASSERT_NE(read_gamma, std::string::npos);
  ASSERT_NE(release, std::string::npos);
  EXPECT_LT(source.find("wgmma_wait<0>();"), wait);
  EXPECT_LT(wait, read_r);
  EXPECT_LT(read_r, read_gamma);
  EXPECT_LT(read_gamma, release);
  EXPECT_FALSE(contains(source, "in_R[(size_t)grow * N + gcol]"));
  // Carried tiles in the L2 stash (several tiles a warpgroup) or N not a multiple of 8: refused.
  s.carried = ValueHome::kL2Stash;
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);
  s.carried = ValueHome::kRegisters;
  EXPECT_THROW(emit_kernel(plan_of("post_layernorm", 256, 64, 1004), s, kKey), CompileError);
}

TEST(StagedInputsKernel, OneInputSlotInAClusterFormIsReleasedBeforeTheExchange) {
  // The residual alone staged (the vectors read from global memory), in one slot that the first stage
  // releases: the producer loads it after the tile's operands, and the next tile's load waits only for the
  // first stage, not for the exchange and the last stage.
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1000);
  Schedule s = cluster_schedule(128, 128, 8, ValueHome::kRegisters);
  s.tma_inputs = s.unstaged_vectors = true;
  const std::string two_slots = emit_kernel(ln, s, kKey).source;
  s.one_input_slot = true;
  const KernelSource kernel = emit_kernel(ln, s, kKey);
  const std::string& source = kernel.source;
  EXPECT_TRUE(contains(source, "[IN_SLOT_BYTES] staged inputs, one slot"));
  const std::size_t operands =
      source.find("for (int kb = 0; kb < K_BLOCKS; ++kb)", source.find("regs_decrease<"));
  const std::size_t produce = source.find("mbar_expect_tx(&in_full[bar], IN_TX_BYTES);");
  ASSERT_NE(produce, std::string::npos);
  EXPECT_LT(operands, produce);
  const std::string release = "if (lane == 0) mbar_arrive(&in_empty[in_slot]);";
  const std::size_t read_r = source.find("lds_u16(in_tile + 0 + ((i >> 5) * BM + local_row0 + 8 * h) * 128");
  const std::size_t released = source.find(release);
  const std::size_t stage1 = source.find("// ---- stage 1 ----");
  ASSERT_NE(read_r, std::string::npos);
  ASSERT_NE(released, std::string::npos);
  ASSERT_NE(stage1, std::string::npos);
  EXPECT_LT(read_r, released);
  EXPECT_LT(released, stage1);
  EXPECT_EQ(source.find(release, released + 1), std::string::npos);  // released once
  // With two slots the same inputs are released after the last stage, as before.
  EXPECT_GT(two_slots.find(release), two_slots.find("// ---- stage 1 ----"));
  // One slot's bytes fewer: the residual's 64 columns x 128 rows in two boxes.
  EXPECT_EQ(emit_kernel(ln, s, kKey).launch.shared_bytes + 32768, [&] {
    Schedule two = s;
    two.one_input_slot = false;
    return emit_kernel(ln, two, kKey).launch.shared_bytes;
  }());
}

TEST(StagedInputsKernel, ResidentVectorsAreLoadedOnceAndTheSlotHoldsTheResidualAlone) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1000);
  Schedule s = cluster_schedule(128, 128, 8, ValueHome::kRegisters);
  s.tma_inputs = s.resident_vectors = s.one_input_slot = true;
  const KernelSource kernel = emit_kernel(ln, s, kKey);
  const std::string& source = kernel.source;
  // The vectors in their own region ahead of the one slot, which holds R alone (64 columns x 128 rows, two
  // boxes); their one barrier after the slot's four.
  EXPECT_TRUE(contains(source,
                       "constexpr u32 VEC_BYTES = 3072, VEC_TX_BYTES = 768;  // resident vectors: b at "
                       "0, gamma at 1024, beta at 2048"));
  EXPECT_TRUE(contains(source, "constexpr u32 IN_SLOT_BYTES = 32768, IN_TX_BYTES = 32768, IN_BOXES = 2;"));
  EXPECT_TRUE(contains(source, "unsigned char* sIn = (unsigned char*)(sVec + VEC_BYTES);"));
  EXPECT_TRUE(contains(source, "u64* full = vec_full + 1;"));
  // Loaded once by the producer before its tile loop, waited for once by each consumer warpgroup before its.
  const std::size_t producer = source.find("regs_decrease<");
  const std::size_t load =
      source.find("tma_load_2d(sVec + 1024 + b * 128, &tma_in_gamma, vec_full, ", producer);
  const std::size_t tile_loop = source.find("for (int t = 0; t < tiles.count; ++t)", producer);
  ASSERT_NE(load, std::string::npos);
  EXPECT_LT(load, tile_loop);
  EXPECT_EQ(source.find("&tma_in_gamma, &in_full["), std::string::npos);  // not a tile at a time
  const std::size_t consumer = source.find("regs_increase<");
  const std::size_t wait = source.find("if (tiles.count > 0) mbar_wait(vec_full, 0);", consumer);
  ASSERT_NE(wait, std::string::npos);
  EXPECT_LT(wait, source.find("for (int t = 0; t < tiles.count; ++t)", consumer));
  // Read from the region in the last stage; the slot released after the first.
  const std::size_t stage1 = source.find("// ---- stage 1 ----");
  EXPECT_NE(source.find("lds_u16(vec_tile + 1024 + (i >> 5) * 128", stage1), std::string::npos);
  EXPECT_LT(source.find("if (lane == 0) mbar_arrive(&in_empty[in_slot]);"), stage1);
  // The region's bytes and barrier beside the one slot: the two-slot kernel's shared memory less a slot of
  // 32768 + 3 x 1024 bytes of vectors, plus the vectors' region and its barrier.
  Schedule two = s;
  two.resident_vectors = two.one_input_slot = false;
  EXPECT_EQ(kernel.launch.shared_bytes,
            emit_kernel(ln, two, kKey).launch.shared_bytes - 2 * 35840 + 32768 + 3072 + 8);
}

}  // namespace
}  // namespace comfuse::codegen
