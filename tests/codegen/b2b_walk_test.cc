// The fused back-to-back kernel's walk over row blocks and its producer: the block mapping with and without a
// causal mask, the persistent loop, and where the producer loads each block's X.
#include "codegen/b2b_walk.h"

#include <gtest/gtest.h>

#include "te/workloads.h"

namespace comfuse::codegen {
namespace {

using schedule::B2BSchedule;

schedule::B2BPlan plan_of(const std::string& workload, const te::Shape& shape) {
  return schedule::plan_b2b(te::build_workload(workload, shape));
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(B2BWalk, PlainBlocksGoInOrderAndCausalOnesLongestFirst) {
  const schedule::B2BPlan mlp = plan_of("mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}});
  const B2BSchedule one_block{4, false, 128, 64};
  CodeStream plain;
  B2BWalk(mlp, one_block).block_mapping(plain, "blockIdx.x");
  EXPECT_TRUE(has(plain.str(), "const int batch = blockIdx.x / M_BLOCKS;"));
  EXPECT_TRUE(has(plain.str(), "const int chunks = CHUNKS;"));
  EXPECT_EQ(B2BWalk(mlp, one_block).walked("c"), "c");

  const schedule::B2BPlan causal = plan_of("attention", {{"BH", 2}, {"L", 192}, {"D", 64}, {"CAUSAL", 1}});
  CodeStream masked;
  B2BWalk(causal, one_block).block_mapping(masked, "block");
  EXPECT_TRUE(has(masked.str(), "const int m0 = (M_BLOCKS - 1 - block / BATCH) * BM;"));
  EXPECT_TRUE(has(masked.str(), "const int chunks = min(CHUNKS, max(0, m0 + BM - 1 + (0)) / BN1 + 1);"));
}

TEST(B2BWalk, PersistentProducerLoadsEachBlocksXIntoTheBufferItsRoundNames) {
  const schedule::B2BPlan mlp = plan_of("mlp_relu", {{"M", 1024}, {"K", 128}, {"N", 512}, {"O", 128}});
  const B2BWalk walk(mlp, B2BSchedule{4, false, 128, 128, true, true});
  EXPECT_EQ(walk.walked("c"), "(q + c)");
  CodeStream out;
  walk.producer(out, 40);
  const std::string text = out.str();
  EXPECT_TRUE(has(text, "regs_decrease<40>();"));
  // Each block's X at the block's start, once the block two before has given the buffer back; the W1 ring
  // and W2's buffers count chunks over the whole walk.
  const std::size_t loop =
      text.find("for (int block = blockIdx.x; block < BLOCKS; block += gridDim.x, ++round)");
  const std::size_t wait = text.find("mbar_wait(&empty_x[round & 1], ((round >> 1) & 1) ^ 1);");
  const std::size_t load = text.find("tma_load_2d(sx + kb * BM * BK, &tma_x, &full_x[round & 1], kb * BK");
  ASSERT_NE(loop, std::string::npos);
  EXPECT_LT(loop, wait);
  EXPECT_LT(wait, load);
  EXPECT_TRUE(has(text, "const int it = (q + c) * K_BLOCKS + kb;"));
  EXPECT_TRUE(has(text, "q += chunks;"));

  // One CTA a block: X once, at the start, into its one buffer.
  CodeStream once;
  B2BWalk(mlp, B2BSchedule{4, false, 128, 128}).producer(once, 40);
  EXPECT_TRUE(has(once.str(), "tma_load_2d(sx + kb * BM * BK, &tma_x, full_x, kb * BK, batch * M + m0);"));
  EXPECT_FALSE(has(once.str(), "q += chunks;"));
}

}  // namespace
}  // namespace comfuse::codegen
