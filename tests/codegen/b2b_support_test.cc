// What the fused back-to-back kernel takes: each refusal names its reason, and the refusal of a program is
// the emitter's error, found without emitting.
#include "codegen/b2b_support.h"

#include <gtest/gtest.h>

#include "codegen/b2b_emitter.h"
#include "te/error_of.h"
#include "te/workloads.h"

namespace comfuse::codegen {
namespace {

std::string refusal_of(const std::string& workload, const te::Shape& shape) {
  return te::error_of([&] { check_b2b_supported(schedule::plan_b2b(te::build_workload(workload, shape))); });
}

TEST(B2BSupport, EachRefusalNamesItsReason) {
  EXPECT_EQ(refusal_of("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 64}}), "<no error>");
  EXPECT_EQ(refusal_of("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 1024}}),
            "fused back-to-back kernel: GEMM2 has O=1024 columns: one warpgroup's accumulator holds a "
            "multiple of 8 up to 256");
  EXPECT_EQ(
      refusal_of("mlp_relu", {{"M", 64}, {"K", 1024}, {"N", 64}, {"O", 64}}),
      "fused back-to-back kernel: K=1024 is above 256: the kernel keeps X's [BM, K] tile in shared memory");
  EXPECT_EQ(refusal_of("mlp_relu", {{"M", 64}, {"K", 68}, {"N", 64}, {"O", 64}}),
            "fused back-to-back kernel: K=68 must be a multiple of 8 (16-byte TMA rows)");
  EXPECT_EQ(
      refusal_of("attention", {{"BH", 2}, {"L", 64}, {"D", 72}, {"CAUSAL", 0}}),
      "fused back-to-back kernel: 'V' is [K, O] with O=72: it is read in boxes of 64 columns, so O must be a "
      "multiple of 64");
}

TEST(B2BSupport, RefusalIsTheEmittersErrorWithoutEmitting) {
  EXPECT_EQ(b2b_kernel_refusal(te::build_workload("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 64}})),
            std::nullopt);
  const te::Program wide = te::build_workload("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 1024}});
  EXPECT_EQ(b2b_kernel_refusal(wide),
            te::error_of([&] { emit_b2b_kernel(schedule::plan_b2b(wide), {}, "sha256:0"); }));
  EXPECT_NE(b2b_kernel_refusal(te::build_workload("post_layernorm", {{"M", 64}, {"K", 64}, {"N", 64}})),
            std::nullopt);  // one contraction: not back to back
}

}  // namespace
}  // namespace comfuse::codegen
