// The finish kernel's frame: the schedule as the finish kernel sees it, and which row each warp takes (a warp
// a row, ROW_SPLIT warps a row with finish_row_split, the last rows first with reverse_finish).
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

}  // namespace
}  // namespace comfuse::codegen
