// The finish kernel's frame: the schedule as the finish kernel sees it, and which row each warp takes (a warp
// a row, ROW_SPLIT warps a row with finish_row_split, the last rows first with reverse_finish, rows a grid
// apart with persistent_finish).
#include "codegen/finish_kernel.h"

#include <gtest/gtest.h>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"

namespace comfuse::codegen {
namespace {

using schedule::Schedule;
using source_text::contains;
using test_programs::kKey;
using test_programs::plan_of;

TEST(FinishKernel, SeesItsInputsAndOutputsInGlobalMemory) {
  Schedule s = test_programs::deferred_ping_pong();
  s.tma_inputs = s.tma_store = s.vector_loads = s.batched_reads = s.deep_reads = true;
  Schedule finish = finish_schedule(s);
  EXPECT_FALSE(finish.tma_inputs || finish.tma_store);
  EXPECT_TRUE(finish.vector_loads && finish.batched_reads && finish.deep_reads);  // pairs and batches
  s.wide_finish = true;  // eight columns at once instead
  finish = finish_schedule(s);
  EXPECT_FALSE(finish.vector_loads || finish.batched_reads || finish.deep_reads);
  EXPECT_TRUE(finish.wide_finish);
  EXPECT_EQ(finish.bn, s.bn);  // the rest as it was
}

TEST(FinishKernel, EachWarpTakesItsRow) {
  const schedule::FusionPlan plan = plan_of("gemm_softmax", 256, 64, 4096);
  Schedule s = test_programs::deferred_ping_pong();
  s.online_softmax = true;
  const KernelSource one = emit_kernel(plan, s, kKey);
  EXPECT_TRUE(contains(one.source,
                       "// The deferred reduction's finish kernel: one warp a row.\n"
                       "extern \"C\" __global__ void __launch_bounds__(256)\n" +
                           one.finish_name + "("));
  EXPECT_TRUE(contains(one.source,
                       "  const int row = blockIdx.x * 8 + threadIdx.x / 32;\n  if (row >= M) return;\n"
                       "  const bool row_writer = lane == 0;  // writes row-value outputs\n"));
  s.finish_row_split = s.reverse_finish = true;
  const KernelSource split = emit_kernel(plan, s, kKey);
  EXPECT_TRUE(contains(split.source, "// The deferred reduction's finish kernel: ROW_SPLIT warps a row.\n"));
  EXPECT_TRUE(contains(split.source,
                       "  const int row = M - 1 - (blockIdx.x * 2 + threadIdx.x / (32 * ROW_SPLIT));\n"));
  EXPECT_TRUE(contains(split.source,
                       "  if (row < 0) return;\n"
                       "  const bool row_writer = lane == 0 && part == 0;  // writes row-value outputs\n"));
}

TEST(FinishKernel, PersistentWarpsWalkRowsAndAskL2ForTheNext) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", 127, 72, 1000);
  Schedule s = test_programs::deferred_ping_pong();
  s.one_pass_variance = true;  // two stages: a reduction barrier the finish kernel runs after
  const KernelSource one_wave = emit_kernel(plan, s, kKey);
  EXPECT_FALSE(one_wave.launch.persistent_finish);
  EXPECT_FALSE(contains(one_wave.source, "nth += stride"));
  s.persistent_finish = true;
  const KernelSource walk = emit_kernel(plan, s, kKey);
  EXPECT_TRUE(walk.launch.persistent_finish);
  EXPECT_EQ(walk.launch.finish_grid_x, one_wave.launch.finish_grid_x);  // the most CTAs, a row a warp
  EXPECT_TRUE(contains(walk.source,
                       "  const int stride = gridDim.x * 8;\n  #pragma unroll 1\n"
                       "  for (int nth = blockIdx.x * 8 + threadIdx.x / 32; nth < M; nth += stride) {\n"));
  // The lane and the vectors (bias, gamma, beta; not the residual R) copied each row, opaquely.
  EXPECT_TRUE(contains(walk.source, "  const int lane_rows = lane;\n  const u16* const in_b_rows = in_b;\n"));
  EXPECT_TRUE(
      contains(walk.source, "    asm volatile(\"mov.u32 %0, %1;\" : \"=r\"(lane) : \"r\"(lane_rows));\n"));
  EXPECT_TRUE(contains(walk.source,
                       "    asm volatile(\"mov.b64 %0, %1;\" : \"=l\"(in_beta) : \"l\"(in_beta_rows));\n"));
  EXPECT_FALSE(contains(walk.source, "in_R_rows"));
  // The next row's f32 stash, 4000 bytes: one line a lane for the first 32 lines (4096 bytes), the last
  // lanes' past the row's end left out.
  EXPECT_TRUE(contains(
      walk.source,
      "    if (nth + stride < M) {\n"
      "      const unsigned char* const next_row = (const unsigned char*)stash + (size_t)(nth + "
      "stride) * 4000;\n"
      "      const int line = lane * 128;\n"
      "      if (line < 4000) asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(next_row + line));\n"
      "    }\n"));
  EXPECT_FALSE(contains(walk.source.substr(walk.source.find(walk.finish_name + "(")), "return;"));
  // Four warps a row over the last rows first: a group's lanes split the lines, the next row counts down.
  const schedule::FusionPlan wide = plan_of("post_layernorm", 127, 72, 9000);
  s.finish_row_split = s.reverse_finish = true;
  const std::string split = emit_kernel(wide, s, kKey).source;
  EXPECT_TRUE(contains(split, "  const int stride = gridDim.x * 2;\n"));
  EXPECT_TRUE(contains(split, "    const int row = M - 1 - (nth);\n"));
  EXPECT_TRUE(contains(split,
                       "(size_t)(M - 1 - (nth + stride)) * 36000;\n"
                       "      const int line = (part * 32 + lane) * 128;\n"
                       "      asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(next_row + line));\n"
                       "      asm volatile(\"prefetch.global.L2 [%0];\" :: \"l\"(next_row + line + 16384));\n"
                       "      if (line + 32768 < 36000) asm volatile("));
}

}  // namespace
}  // namespace comfuse::codegen
