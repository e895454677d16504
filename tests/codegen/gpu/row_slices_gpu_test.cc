// Row slices on the GPU: a kernel emitted for M / S rows, bound over the whole program's buffers and launched
// once per slice, computes the whole program (fresh inputs, outputs poisoned, slices with tails against the
// tile); and bind_whole refuses a program its kernel is not a row slice of.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/fused_kernel.h"
#include "codegen/reference_check.h"
#include "codegen/test_programs.h"
#include "runtime/gpu_test_guard.h"
#include "support/error.h"
#include "te/interpreter.h"
#include "te/row_slice.h"

namespace comfuse::codegen {
namespace {

class RowSlicesGpuTest : public gpu_test::GpuTest {};

enum class Form { kDefault, kDeferred, kStashedByTma };

// The plan's default schedule (an in-kernel reduction at these shapes), a deferred one, or a persistent
// deferred one whose stash leaves through TMA (the form of the suite's winners).
schedule::Schedule form(const schedule::FusionPlan& plan, bool softmax, Form f) {
  schedule::Schedule s = schedule::default_schedule(plan);
  if (f == Form::kDefault) return s;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.cluster_n = 1;
  s.online_softmax = softmax;
  s.one_pass_variance = !softmax;
  if (f == Form::kStashedByTma) {
    s.persistent = s.tma_store = true;
    s.bn = 256;
    s.stages = 3;
    s.stash_terms = softmax;
    s.bf16_stash = s.tma_inputs = s.one_input_slot = s.stash_in_slot = !softmax;
  }
  return s;
}

// The outputs of `whole` from `slices` launches of the schedule of form `f` emitted at its rows / slices.
std::vector<te::HostBuffer> run_in_slices(const runtime::Context& context, const te::Program& whole,
                                          bool softmax, int slices, const std::vector<te::HostBuffer>& inputs,
                                          Form f) {
  const std::int64_t m = whole.outputs().front().shape().front();
  const schedule::FusionPlan part = schedule::plan_fusion(te::with_rows(whole, m / slices));
  const schedule::Schedule schedule = form(part, softmax, f);
  const FusedKernel kernel(context, part.program, emit_kernel(part, schedule, test_programs::kKey));
  std::vector<const void*> data;
  for (const te::HostBuffer& input : inputs) data.push_back(input.data());
  int cut = 0;
  DeviceBindings bindings = kernel.bind_whole(whole, data, &cut);
  EXPECT_EQ(cut, slices);
  for (auto& out : bindings.outputs) out.fill_bytes(0xFF);
  for (int slice = 0; slice < slices; ++slice) kernel.launch_slice(bindings, slice);
  context.synchronize();
  return download_outputs(whole, bindings);
}

TEST_F(RowSlicesGpuTest, SlicesOfTheRowsComputeTheWholeProgram) {
  struct Shape {
    std::string workload;
    std::int64_t m, k, n;
    int slices;
  };
  // 400 rows in 4 slices of 100 (BM 128: every slice a tail), 512 in 2, 384 in 3 of a softmax.
  const std::vector<Shape> shapes = {{"post_layernorm", 400, 200, 256, 4},
                                     {"post_layernorm", 512, 128, 512, 2},
                                     {"gemm_softmax", 384, 64, 1024, 3}};
  std::uint64_t seed = 20261207;
  for (const Shape& c : shapes) {
    for (const Form f : {Form::kDefault, Form::kDeferred, Form::kStashedByTma}) {
      SCOPED_TRACE(c.workload + " M=" + std::to_string(c.m) + " in " + std::to_string(c.slices) +
                   " slices, form " + std::to_string(static_cast<int>(f)));
      const te::Program whole = test_programs::workload(c.workload, c.m, c.k, c.n);
      std::vector<te::HostBuffer> inputs;
      for (const te::Tensor& t : whole.inputs())
        inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), seed++));
      const std::vector<te::HostBuffer> gpu =
          run_in_slices(context(), whole, c.workload == "gemm_softmax", c.slices, inputs, f);
      const std::vector<te::HostBuffer> reference = te::evaluate(whole, inputs);
      ASSERT_EQ(gpu.size(), reference.size());
      for (std::size_t o = 0; o < gpu.size(); ++o) {
        const te::Comparison cmp = te::compare(gpu[o], reference[o]);
        EXPECT_EQ(cmp.non_finite, 0) << "a slice left rows unwritten";
        EXPECT_LE(cmp.rel_error, 1e-2);
      }
    }
  }
}

TEST_F(RowSlicesGpuTest, AProgramThatIsNotARowSliceIsRefusedByName) {
  const schedule::FusionPlan part = test_programs::plan_of("post_layernorm", 128, 128, 256);
  const FusedKernel kernel(context(), part.program,
                           emit_kernel(part, form(part, false, Form::kDeferred), test_programs::kKey));
  int cut = 0;
  const auto message = [&](const te::Program& whole) {
    try {
      kernel.bind_whole(whole, std::vector<const void*>(whole.inputs().size(), nullptr), &cut);
    } catch (const CompileError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  // Another N: W's rows differ, and so do its columns' count in the residual; 300 rows do not cut by 128.
  EXPECT_NE(message(test_programs::workload("post_layernorm", 256, 128, 512)).find("is not a row slice"),
            std::string::npos);
  EXPECT_NE(
      message(test_programs::workload("post_layernorm", 300, 128, 256)).find("'X' of the whole program"),
      std::string::npos);
  EXPECT_EQ(message(test_programs::workload("post_layernorm", 512, 128, 256)), "no error");
  EXPECT_EQ(cut, 4);
}

}  // namespace
}  // namespace comfuse::codegen
