// The fused back-to-back kernel on the GPU against the CPU reference: MLPs at shapes with tails in every
// dimension and at the suite's small-MLP shape, attention (plain, causal, few queries, and the soft-capped
// DSL example); each one chunk at a time, overlapped and (two warpgroups) in ping-pong, with one or two
// consumer warpgroups (bm 64, 128), 64- or 128-column chunks, one CTA a row block or persistent, and GEMM2's
// operand in registers or in shared memory, the epilogue stored directly or staged for TMA, where the
// schedule's legality takes them; fresh random inputs, the output poisoned with NaN first.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

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
  int check_every_schedule(bool operand_in_shared, bool tma_store);
};

// Every legal schedule of each case (with the operand in registers, or in shared memory; with the TMA store,
// which is legal on persistent grids) against the CPU reference, fresh random inputs, the output
// poisoned first; returns how many schedules ran. The kernels compile on every core first.
int B2BKernelGpuTest::check_every_schedule(bool operand_in_shared, bool tma_store) {
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
      // Rows a multiple of 64 but not of 128: the last block's second warpgroup has no rows.
      {"attention", {{"BH", 2}, {"L", 192}, {"D", 64}, {"CAUSAL", 1}}, 4},
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
  struct Run {
    const Case* c;
    te::Program program;
    B2BSchedule schedule;
    KernelSource source;
    std::optional<runtime::CompiledProgram> compiled;
    std::string error;
  };
  std::vector<Run> runs;
  for (const Case& c : cases) {
    const te::Program program = build(c);
    const schedule::B2BPlan plan = schedule::plan_b2b(program);
    for (const bool persistent : {false, true}) {
      for (const auto& [bm, bn1] :
           std::vector<std::pair<int, int>>{{128, 64}, {64, 64}, {64, 128}, {128, 128}}) {
        for (const auto& [overlap, pingpong] :
             std::vector<std::pair<bool, bool>>{{false, false}, {true, false}, {false, true}}) {
          const B2BSchedule schedule{c.stages,   overlap,           bm,       bn1, pingpong,
                                     persistent, operand_in_shared, tma_store};
          try {
            schedule::check_legal(plan, schedule);
          } catch (const CompileError&) {  // e.g. bm=64 at O=256, ping-pong at bm=64, two X blocks at K=256
            continue;
          }
          runs.push_back({&c, program, schedule, emit_b2b_kernel(plan, schedule, te::workload_key(program)),
                          std::nullopt, ""});
        }
      }
    }
  }
  std::atomic<std::size_t> next{0};
  auto compile = [&] {
    for (std::size_t i = next++; i < runs.size(); i = next++) {
      try {
        runs[i].compiled = compile_kernel_source(runs[i].source);
      } catch (const std::exception& error) {
        runs[i].error = error.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    threads.emplace_back(compile);
  compile();
  for (std::thread& t : threads) t.join();

  std::uint64_t seed = 20261202;
  int checked = 0;
  for (Run& run : runs) {
    SCOPED_TRACE(label(*run.c) + " " + schedule::to_string(run.schedule));
    ++checked;
    if (!run.compiled) {
      ADD_FAILURE() << "compiling: " << run.error;
      continue;
    }
    const te::Program& program = run.program;
    FusedKernel kernel(context(), program, run.source, *std::move(run.compiled));
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
  return checked;
}

TEST_F(B2BKernelGpuTest, MlpsAndAttentionMatchTheReference) {
  // Every case at least at bm=128 and bn1=64, three ways, most at the others, both grids.
  EXPECT_GE(check_every_schedule(false, false), 150);
}

TEST_F(B2BKernelGpuTest, MlpsAndAttentionMatchTheReferenceWithTheOperandInSharedMemory) {
  EXPECT_GE(check_every_schedule(true, false), 150);
}

TEST_F(B2BKernelGpuTest, MlpsAndAttentionMatchTheReferenceWithTheTmaStore) {
  // Persistent grids, the operand in either place; not the few-query attention (32 rows a batch) nor O above
  // K (the MLP at O=40, K=136 fits; the one at O=256, K=256 too).
  EXPECT_GE(check_every_schedule(false, true) + check_every_schedule(true, true), 80);
}

}  // namespace
}  // namespace comfuse::codegen
