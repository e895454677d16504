// The kernels' instruction-level forms that a knob switches without changing what they compute: the helpers
// packed_rounding defines and the expressions that use them, and the shared-memory alignment of
// shared_pointers.
#include <gtest/gtest.h>

#include <sstream>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using source_text::contains;
using test_programs::kKey;
using test_programs::plan_of;

TEST(KernelHelpers, PackedRoundingDefinesItsHelpersAndRoundsTheEpilogueWithThem) {
  // The GEMM's output rounding (the fragment's elements before their pairs are packed) and a deferred layer
  // norm's roundings, in the main kernel and the finish kernel.
  for (const char* workload : {"gemm", "post_layernorm"}) {
    const FusionPlan plan = plan_of(workload, 256, 128, 512);
    Schedule s;
    if (std::string(workload) == "post_layernorm") {
      s.reduction = ReductionPlacement::kDeferred;
      s.carried = ValueHome::kL2Stash;
      s.one_pass_variance = true;  // two stages: the finish kernel runs the second
    }
    const KernelSource scalar = emit_kernel(plan, s, kKey);
    s.packed_rounding = true;
    const KernelSource packed = emit_kernel(plan, s, kKey);
    EXPECT_TRUE(contains(packed.source, "cvt.rn.bf16x2.f32 %0, %1, %1;")) << workload;
    EXPECT_TRUE(contains(packed.source, "= round_bf16_packed(")) << workload;
    EXPECT_FALSE(contains(packed.source, "= round_bf16(")) << workload;
    EXPECT_FALSE(contains(scalar.source, "round_bf16_packed")) << workload;
    EXPECT_TRUE(contains(scalar.source, "= round_bf16(")) << workload;
  }
}

TEST(KernelHelpers, SharedPointersAlignTheSharedArrayByAnOffset) {
  const FusionPlan gemm = plan_of("gemm", 256, 128, 512);
  Schedule s;
  s.tma_store = true;
  const std::string generic = emit_kernel(gemm, s, kKey).source;
  s.shared_pointers = true;
  const std::string shared = emit_kernel(gemm, s, kKey).source;
  const std::string by_integer =
      "unsigned char* smem = (unsigned char*)(((u64)smem_raw + 1023) & ~(u64)1023);";
  const std::string by_offset =
      "unsigned char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);";
  EXPECT_TRUE(contains(generic, by_integer));
  EXPECT_FALSE(contains(generic, by_offset));
  EXPECT_TRUE(contains(shared, by_offset));
  EXPECT_FALSE(contains(shared, by_integer));
  // Everything else is the same kernel: the carve-up of the memory, the stores to the staging tile.
  const auto rest = [](const std::string& source) {
    std::string kept;
    std::istringstream lines(source);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("unsigned char* smem =") == std::string::npos &&
          line.find("// (An offset from the shared array") == std::string::npos &&
          line.find("// schedule: ") == std::string::npos)
        kept += line + "\n";
    }
    return kept;
  };
  EXPECT_EQ(rest(shared), rest(generic));
}

}  // namespace
}  // namespace comfuse::codegen
