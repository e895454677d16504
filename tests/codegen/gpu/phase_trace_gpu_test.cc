// Traced kernels on the GPU: still right against the CPU reference (fresh inputs, outputs poisoned, tails in
// M and K), and their traces tell the truth: every slot finished, every tile's loads recorded once and its
// mainloop once for each consumer warpgroup that computes it, on SMs the device has.
#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <utility>

#include "codegen/fused_kernel.h"
#include "codegen/reference_check.h"
#include "codegen/test_programs.h"
#include "codegen/trace_cases.h"
#include "runtime/gpu_test_guard.h"

namespace comfuse::codegen {
namespace {

class PhaseTraceGpuTest : public gpu_test::GpuTest {};

TEST_F(PhaseTraceGpuTest, TracedKernelsAreRightAndTheirTracesCoverEveryTile) {
  EmitOptions options;
  options.phase_trace = true;
  const int sms = context().attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  std::uint64_t seed = 20261205;
  for (const trace_cases::TracedCase& c : trace_cases::cases()) {
    SCOPED_TRACE(c.what);
    const KernelSource source = emit_kernel(c.plan, c.schedule, test_programs::kKey, options);
    const te::Program& program = c.plan.program;
    std::vector<te::HostBuffer> inputs;
    std::vector<const void*> data;
    for (const te::Tensor& t : program.inputs()) {
      inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), seed++));
      data.push_back(inputs.back().data());
    }
    const FusedKernel kernel(context(), program, source);
    DeviceBindings bindings = kernel.bind(data);
    for (int launch = 0; launch < 2; ++launch) {  // the second launch's trace is read: no stale slot passes
      for (auto& out : bindings.outputs) out.fill_bytes(0xFF);
      kernel.clear_trace(bindings);
      kernel.launch(bindings);
      context().synchronize();
    }
    const std::vector<te::HostBuffer> gpu = download_outputs(program, bindings);
    const ReferenceCheck check = check_against_reference(program, inputs, gpu);
    EXPECT_TRUE(check.ok) << check.detail;

    const std::vector<TraceSlot> slots = kernel.read_trace(bindings);
    ASSERT_EQ(slots.size(), static_cast<std::size_t>(kernel.grid()) * (source.launch.block_x / 128));
    using Tiles = std::multiset<std::pair<int, int>>;
    Tiles expected;  // every tile once
    const auto& anchor = c.plan.anchor;
    for (int mb = 0; mb * c.schedule.bm < anchor.m; ++mb) {
      for (int nt = 0; nt * c.schedule.bn < anchor.n; ++nt) expected.insert({mb, nt});
    }
    Tiles computed, loaded;
    for (const TraceSlot& slot : slots) {
      EXPECT_LT(slot.sm, sms);
      EXPECT_EQ(slot.written, static_cast<std::int64_t>(slot.records.size())) << "no slot is truncated here";
      for (const TraceRecord& r : slot.records) {
        if (r.event == TraceEvent::kMainloopEnd) computed.insert({r.m_block, r.n_tile});
        if (r.event == TraceEvent::kProducerTileEnd) loaded.insert({r.m_block, r.n_tile});
      }
    }
    // Each tile is loaded once; its mainloop runs in every consumer warpgroup of a cooperative CTA (each on
    // its 64 rows) and in one warpgroup under ping-pong.
    EXPECT_EQ(loaded, expected);
    const int per_tile =
        c.schedule.warp_roles == schedule::WarpRoles::kCooperative ? c.schedule.consumer_warpgroups() : 1;
    Tiles expected_computed;
    for (int i = 0; i < per_tile; ++i) expected_computed.insert(expected.begin(), expected.end());
    EXPECT_EQ(computed, expected_computed);
    const TraceSummary summary = summarize_trace(slots);
    EXPECT_GT(summary.mainloop_share, 0);
    EXPECT_LE(summary.mainloop_share, 1);
    EXPECT_GT(summary.clock_mhz, 500);  // cycles over nanoseconds: an SM's clock, not a unit slip
    EXPECT_LT(summary.clock_mhz, 3000);
    std::cout << c.what << " [" << schedule::to_string(c.schedule) << "]: rel_err " << check.max_rel_error
              << "\n"
              << format_trace_summary(summary);
  }
}

}  // namespace
}  // namespace comfuse::codegen
