// When knobs apply and what they size (schedule/knob_rules.cc): divisions the epilogue may rewrite, the
// accumulator's registers, the read chunk, and which finish kernels keep their row in registers.
#include <gtest/gtest.h>

#include "schedule/schedule.h"
#include "te/expr_inl.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

FusionPlan plan_of(const std::string& workload, std::int64_t m, std::int64_t k, std::int64_t n) {
  return plan_fusion(te::build_workload(workload, {{"M", m}, {"K", k}, {"N", n}}));
}

TEST(KnobRules, DivisionsByARowValue) {
  // softmax: sm = sm_exp / sm_sum(i); softcap: also scaled / 30 (a constant); post-LN divides by none.
  const FusionPlan softcap = plan_of("gemm_softcap_softmax", 256, 128, 512);
  int by_row = 0, by_constant = 0;
  for (const Stage& stage : softcap.stages) {
    for (const te::Tensor& t : stage.tiles) {
      if (!t->body.defined()) continue;
      te::any_subexpr(t->body, [&](const te::Expr& e) {
        by_row += divides_by_row_value(softcap, e) ? 1 : 0;
        by_constant += divides_by_constant(e) ? 1 : 0;
        return false;
      });
    }
  }
  EXPECT_EQ(by_row, 1);
  EXPECT_EQ(by_constant, 1);
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  const auto divides = [&](const te::Expr& e) { return divides_by_row_value(ln, e); };
  for (const Stage& stage : ln.stages) {
    for (const te::Tensor& t : stage.tiles) {
      if (!t->body.defined()) continue;
      EXPECT_FALSE(te::any_subexpr(t->body, divides)) << t.name();
    }
  }
}

TEST(KnobRules, AccumulatorRegisters) {
  const FusionPlan gemm = plan_of("gemm", 256, 128, 512);
  const FusionPlan rms = plan_of("post_rmsnorm", 256, 128, 512);  // carries 'biased'
  Schedule s;
  s.bn = 256;
  EXPECT_EQ(accumulator_registers(gemm, s), 128);
  s.bn = 128;
  EXPECT_EQ(accumulator_registers(rms, s), 128);
  s.carry_in_accumulator = true;  // 'biased' written over the accumulator
  EXPECT_EQ(accumulator_registers(rms, s), 64);
  s.carry_in_accumulator = false;
  s.carried = ValueHome::kL2Stash;
  EXPECT_EQ(accumulator_registers(rms, s), 64);
}

TEST(KnobRules, ReadChunk) {
  Schedule s;
  s.bn = 256;  // 128 elements a thread a tile
  EXPECT_EQ(read_chunk(s, 1), 16);
  s.bn = 80;  // 40: 16 does not divide it
  EXPECT_EQ(read_chunk(s, 1), 8);
  s.batched_reads = s.deep_reads = true;
  s.bn = 256;
  EXPECT_EQ(read_chunk(s, 1), 64);
  EXPECT_EQ(read_chunk(s, 2), 32);  // 64 values in flight, shared by two carried tiles
  EXPECT_EQ(read_chunk(s, 3), 16);
  s.bn = 96;  // 48: 64 and 32 do not divide it
  EXPECT_EQ(read_chunk(s, 1), 16);
  s.bn = 80;
  EXPECT_EQ(read_chunk(s, 1), 8);
  s.bn = 128;
  EXPECT_EQ(read_chunk(s, 1), 64);
  EXPECT_EQ(read_chunk(s, 9), 8);  // never fewer than 8
}

// A deferred post-LN schedule whose finish kernel reduces its rows from a bf16 stash, walked wide.
Schedule kept_row_schedule() {
  Schedule s;
  s.bm = 64;
  s.bn = 256;
  s.warp_roles = WarpRoles::kPingPong;
  s.reduction = ReductionPlacement::kDeferred;
  s.carried = ValueHome::kL2Stash;
  s.bf16_stash = s.wide_finish = s.finish_reductions = true;
  return s;
}

TEST(KnobRules, FinishRowInRegistersUpToSixtyFourRegistersALane) {
  // A lane keeps eight registers a 512-column step, walked wide (two 16-byte groups) or in pairs (eight
  // bf16 pairs): rows up to 4096 columns fit 64 registers, a column more takes a ninth step.
  const Schedule wide = kept_row_schedule();
  Schedule pairs = wide;
  pairs.wide_finish = false;
  pairs.vector_loads = true;
  for (const std::int64_t n : {64, 1000, 1024, 4096}) {
    const FusionPlan ln = plan_of("post_layernorm", 256, 64, n);
    ASSERT_EQ(ln.carried_tiles.size(), 1u);
    EXPECT_TRUE(finish_row_in_registers(ln, wide)) << "N=" << n;
    EXPECT_TRUE(finish_row_in_registers(ln, pairs)) << "N=" << n;
  }
  for (const std::int64_t n : {4098, 4608, 8192}) {
    const FusionPlan ln = plan_of("post_layernorm", 256, 64, n);
    EXPECT_FALSE(finish_row_in_registers(ln, wide)) << "N=" << n;
    EXPECT_FALSE(finish_row_in_registers(ln, pairs)) << "N=" << n;
  }
}

TEST(KnobRules, FinishRowInRegistersNeedsABf16StashAWalkThatKeepsItAndTheKnob) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  Schedule s = kept_row_schedule();
  ASSERT_TRUE(finish_row_in_registers(ln, s));
  s.finish_reductions = false;  // the finish kernel reads the main kernel's row partials: nothing to keep
  EXPECT_FALSE(finish_row_in_registers(ln, s));
  s = kept_row_schedule();
  s.bf16_stash = false;  // an f32 stash: twice the registers, not kept
  EXPECT_FALSE(finish_row_in_registers(ln, s));
  s = kept_row_schedule();
  s.wide_finish = false;  // one element a load: no walk that keeps it
  EXPECT_FALSE(finish_row_in_registers(ln, s));
  s.vector_loads = true;  // the pairs walk, over an even N
  EXPECT_TRUE(finish_row_in_registers(ln, s));
  const FusionPlan odd = plan_of("post_layernorm", 256, 64, 1023);
  EXPECT_FALSE(finish_row_in_registers(odd, s));  // pairs need an even N
}

}  // namespace
}  // namespace comfuse::schedule
