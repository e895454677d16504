// The fused back-to-back kernel on the GPU against the CPU reference: MLPs at shapes with tails in every
// dimension and at the suite's small-MLP shape, attention (plain, causal, few queries, and the soft-capped
// DSL example); each one chunk at a time, overlapped and (two warpgroups) in ping-pong, with one or two
// consumer warpgroups (bm 64, 128), 64- or 128-column chunks, one CTA a row block or persistent, and GEMM2's
// operand in registers or in shared memory, where the schedule's legality takes them; fresh random inputs,
// the output poisoned with NaN first.
#include <gtest/gtest.h>

#include "codegen/b2b_emitter.h"
#include "codegen/fused_kernel.h"
#include "runtime/gpu_test_guard.h"
#include "softcap_attention_dsl.h"
#include "support/error.h"
#include "te/interpreter.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::codegen {
namespace {

class B2BKernelGpuTest : public gpu_test::GpuTest {
 protected:
  int check_every_schedule(bool operand_in_shared);
};

// Every legal schedule of each case (with the operand in registers, or in shared memory) against the CPU
// reference, fresh random inputs, the output poisoned first; returns how many schedules ran.
int B2BKernelGpuTest::check_every_schedule(bool operand_in_shared) {
  struct Case {
    std::string workload;  // a suite workload, or "softcap_attention" (the DSL example)
    te::Shape shape;
    int stages;
  };
  const std::vector<Case> cases = {
      {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}, 4},
      {"mlp_gelu", {{"M", 77}, {"K", 136}, {"N", 72}, {"O", 40}}, 3},
      {"mlp_gelu", {{"M", 1024}, {"K", 128}, {"N", 512}, {"O", 128}}, 4},
      {"mlp_relu", {{"M", 256}, {"K", 256}, {"N", 320}, {"O", 256}}, 4},
      // Online softmax: tails in L (the chained axis and the rows), batches, the causal mask, D = 64 and 128.
      {"attention", {{"BH", 3}, {"L", 100}, {"D", 64}, {"CAUSAL", 1}}, 4},
      {"attention", {{"BH", 2}, {"L", 200}, {"D", 128}, {"CAUSAL", 0}}, 3},
      {"attention", {{"BH", 2}, {"L", 300}, {"D", 128}, {"CAUSAL", 1}}, 2},
      {"target_attention", {{"BH", 5}, {"LQ", 32}, {"LK", 300}, {"D", 64}}, 4},
      {"softcap_attention", {{"BH", 3}, {"L", 150}, {"D", 128}}, 3},
  };
  auto build = [](const Case& c) {
    if (c.workload == "softcap_attention") {
      return examples::softcap_attention_program(c.shape.at("BH"), c.shape.at("L"), c.shape.at("D"), 30.0);
    }
    return te::build_workload(c.workload, c.shape);
  };
  auto label = [](const Case& c) {
    std::string text = c.workload;
    for (const auto& [axis, extent] : c.shape) text += " " + axis + "=" + std::to_string(extent);
    return text;
  };
  std::uint64_t seed = 20261202;
  int checked = 0;
  for (const Case& c : cases) {
    const te::Program program = build(c);
    const schedule::B2BPlan plan = schedule::plan_b2b(program);
    std::vector<B2BSchedule> schedules;
    for (const bool persistent : {false, true}) {
      for (const auto& [bm, bn1] :
           std::vector<std::pair<int, int>>{{128, 64}, {64, 64}, {64, 128}, {128, 128}}) {
        for (const auto& [overlap, pingpong] :
             std::vector<std::pair<bool, bool>>{{false, false}, {true, false}, {false, true}}) {
          const B2BSchedule schedule{c.stages, overlap, bm, bn1, pingpong, persistent, operand_in_shared};
          try {
            schedule::check_legal(plan, schedule);
            schedules.push_back(schedule);
          } catch (const CompileError&) {  // e.g. bm=64 at O=256, ping-pong at bm=64, two X blocks at K=256
          }
        }
      }
    }
    for (const B2BSchedule& schedule : schedules) {
      SCOPED_TRACE(label(c) + " " + schedule::to_string(schedule));
      ++checked;
      const KernelSource source = emit_b2b_kernel(plan, schedule, te::workload_key(program));
      FusedKernel kernel(context(), program, source);
      std::vector<te::HostBuffer> inputs;
      std::vector<const void*> data;
      for (const te::Tensor& t : program.inputs()) {
        inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), seed++));
        data.push_back(inputs.back().data());
      }
      DeviceBindings bindings = kernel.bind(data);
      bindings.outputs[0].fill_bytes(0xFF);
      kernel.launch(bindings);
      context().synchronize();
      te::HostBuffer gpu(program.outputs()[0].dtype(), program.outputs()[0].shape());
      bindings.outputs[0].copy_to_host(gpu.data(), gpu.size_bytes());
      const te::Comparison cmp = te::compare(gpu, te::evaluate(program, inputs).at(0));
      EXPECT_EQ(cmp.non_finite, 0);
      EXPECT_LE(cmp.rel_error, 1e-2);
    }
  }
  return checked;
}

TEST_F(B2BKernelGpuTest, MlpsAndAttentionMatchTheReference) {
  // Every case at least at bm=128 and bn1=64, three ways, most at the others, both grids.
  EXPECT_GE(check_every_schedule(false), 140);
}

TEST_F(B2BKernelGpuTest, MlpsAndAttentionMatchTheReferenceWithTheOperandInSharedMemory) {
  EXPECT_GE(check_every_schedule(true), 140);
}

}  // namespace
}  // namespace comfuse::codegen
