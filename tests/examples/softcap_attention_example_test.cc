// The soft-capped attention example: the planner derives its online softmax from the DSL program, the blocked
// form agrees with the reference (tails in L included), and the fused B2B kernel is generated for it.
#include <gtest/gtest.h>

#include "b2b_simulation.h"
#include "codegen/b2b_emitter.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/b2b_plan.h"
#include "softcap_attention_dsl.h"
#include "te/interpreter.h"

namespace comfuse {
namespace {

using schedule::OnlineStatistic;

TEST(SoftcapAttentionExample, PlannerDerivesTheOnlineSoftmax) {
  const schedule::B2BPlan plan = schedule::plan_b2b(examples::softcap_attention_program(2, 100, 64, 30.0));
  EXPECT_EQ(plan.first.batch, (std::vector<std::int64_t>{2}));
  ASSERT_EQ(plan.statistics.size(), 2u);
  EXPECT_EQ(plan.statistics[0].tensor.name(), "row_max");
  EXPECT_EQ(plan.statistics[0].kind, OnlineStatistic::Kind::kRunningMax);
  EXPECT_EQ(plan.statistics[1].tensor.name(), "row_sum");
  EXPECT_EQ(plan.statistics[1].kind, OnlineStatistic::Kind::kRescaledSum);
  ASSERT_TRUE(plan.numerator && plan.shift && plan.divisor);
  EXPECT_EQ(plan.numerator->name(), "e");
  EXPECT_EQ(plan.shift->name(), "row_max");
  EXPECT_EQ(plan.divisor->name(), "row_sum");
}

TEST(SoftcapAttentionExample, BlockedFormMatchesTheReference) {
  const te::Program program = examples::softcap_attention_program(2, 100, 64, 30.0);
  const schedule::B2BPlan plan = schedule::plan_b2b(program);
  std::vector<te::HostBuffer> inputs;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const te::Tensor& t = program.inputs()[i];
    inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), 31 + i));
  }
  const te::HostBuffer reference = te::evaluate(program, inputs).at(0);
  for (int block : {64, 37}) {  // 100 columns: a tail block either way
    const std::vector<double> blocked = schedule::simulate_b2b(plan, inputs, block);
    ASSERT_EQ(static_cast<std::int64_t>(blocked.size()), reference.numel());
    double worst = 0, scale = 0;
    for (std::int64_t i = 0; i < reference.numel(); ++i) {
      worst = std::max(worst, std::abs(blocked[i] - reference.get(i)));
      scale = std::max(scale, std::abs(reference.get(i)));
    }
    EXPECT_LE(worst, 1e-2 * scale) << "block " << block;
  }
}

TEST(SoftcapAttentionExample, FusedKernelCompilesWithoutSpills) {
  const te::Program program = examples::softcap_attention_program(8, 512, 128, 50.0);
  for (bool overlap : {false, true}) {
    const codegen::KernelSource source = codegen::emit_b2b_kernel(
        schedule::plan_b2b(program), codegen::B2BSchedule{4, overlap}, "sha256:" + std::string(64, 'a'));
    EXPECT_NE(source.source.find("tanh_approx("), std::string::npos);  // the soft cap, on the SFU
    runtime::CompileOptions options;
    options.program_name = source.name + ".cu";
    const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
    EXPECT_EQ(compiled.kernels.at(source.name).spill_store_bytes, 0) << compiled.log;
  }
}

}  // namespace
}  // namespace comfuse
