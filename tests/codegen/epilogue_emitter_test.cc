// The epilogue's element expressions: with approximate_math, exp and tanh on the special-function unit.
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
using source_text::count;
using test_programs::kKey;
using test_programs::plan_of;

Schedule deferred_online() {
  Schedule s = test_programs::deferred_ping_pong();
  s.online_softmax = true;
  return s;
}

TEST(EpilogueEmitter, ApproximateMathPutsTheElementsExpAndTanhOnTheSpecialFunctionUnit) {
  const FusionPlan softcap = plan_of("gemm_softcap_softmax", 77, 72, 1000);
  Schedule s = deferred_online();
  const std::string accurate = emit_kernel(softcap, s, kKey).source;
  s.approximate_math = true;
  const std::string fast = emit_kernel(softcap, s, kKey).source;
  EXPECT_FALSE(contains(accurate, "tanh_approx"));
  EXPECT_FALSE(contains(accurate, "exp2_approx"));
  EXPECT_TRUE(contains(fast, "__device__ __forceinline__ float tanh_approx(float x)"));
  EXPECT_TRUE(contains(fast, "asm(\"ex2.approx.ftz.f32 %0, %1;\""));
  // Every tanh of an element: the cap, in the main kernel's stage 0 (the finish kernel reads the capped
  // values back from the stash).
  EXPECT_EQ(count(fast, "tanh_approx(("), count(accurate, "tanhf(("));
  EXPECT_GT(count(fast, "tanh_approx(("), 0);
  EXPECT_FALSE(contains(fast, "tanhf("));
  // The finish kernel's exp(x - max): one FFMA into ex2.approx.
  EXPECT_TRUE(contains(fast, "exp2_approx(fmaf("));
  // The reductions' own updates and the row values stay accurate.
  EXPECT_EQ(count(fast, "expf("), count(accurate, "expf(") - count(fast, "exp2_approx(fmaf("));
  EXPECT_TRUE(contains(fast, "rescaled_combine(s, m, os, om);"));
}

TEST(EpilogueEmitter, ApproximateMathNeedsAnExpOrTanhAmongTheElements) {
  Schedule s;
  s.carried = ValueHome::kL2Stash;
  s.approximate_math = true;
  try {
    emit_kernel(plan_of("post_layernorm", 77, 72, 1000), s, kKey);
    ADD_FAILURE() << "approximate_math on LayerNorm passed";
  } catch (const CompileError& error) {
    EXPECT_NE(std::string(error.what()).find("approximate_math=true but no element expression"),
              std::string::npos)
        << error.what();
  }
  // gelu_tanh before a LayerNorm: the tanh of the elements.
  s.one_pass_variance = true;
  const std::string gelu = emit_kernel(plan_of("gemm_gelu_layernorm", 77, 72, 1000), s, kKey).source;
  EXPECT_TRUE(contains(gelu, "tanh_approx(("));
}

}  // namespace
}  // namespace comfuse::codegen
