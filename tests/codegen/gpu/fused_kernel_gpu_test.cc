// Every fused workload x each legal reduction placement x shapes (reduced, odd, suite), on the GPU, against
// the CPU reference: fresh random inputs, outputs poisoned with NaN before each run, relative error <= 1e-2.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "codegen/fused_kernel.h"
#include "codegen/reference_check.h"
#include "codegen/test_programs.h"
#include "fused_kernel_gpu_cases.h"
#include "runtime/gpu_test_guard.h"
#include "support/error.h"
#include "te/interpreter.h"
#include "te/ops.h"
#include "te/printer.h"
#include "te/workloads.h"

namespace comfuse::codegen {
namespace {

using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;

using gpu_cases::build;
using gpu_cases::Case;
using gpu_cases::cases;

struct Outcome {
  bool ok = false;
  std::string detail;
  double rel_error = 0;
};

// The test runs a workload at a time (from 16 cases to about 2200, fewest first; FusedKernelGpuCases prints
// the counts), so that the whole list can be run in parts: ctest -L gpu -R <workload>, COMFUSE_GPU_CASES and
// COMFUSE_GPU_SHARD within one. Each compiles all its cases before it runs any.
const std::vector<std::string> kWorkloads = {
    "gemm",           "gemm_bias_relu",      "masked_softmax_f16",  "swish_rowmax",
    "post_rmsnorm",   "gemm_layernorm_relu", "gemm_gelu_layernorm", "gemm_softmax",
    "post_layernorm", "gemm_softcap_softmax"};

// Every case's workload is one that a test runs (checked without a GPU).
TEST(FusedKernelGpuCases, EveryCaseBelongsToAWorkloadThatIsRun) {
  std::map<std::string, int> per_workload;
  for (const Case& c : cases()) ++per_workload[c.workload];
  for (const auto& [workload, count] : per_workload) {
    std::cout << workload << ": " << count << " cases\n";  // to plan runs of the GPU tests in parts
    EXPECT_NE(std::find(kWorkloads.begin(), kWorkloads.end(), workload), kWorkloads.end())
        << count << " cases of '" << workload << "' would never run";
  }
  for (const std::string& workload : kWorkloads) EXPECT_GT(per_workload[workload], 4) << workload;
}

// benchmarks/device_plan.sh runs knobs' variants by label prefix (`gpu_variants PREFIX`); a prefix that
// matches no case would run nothing on the device and pass. Each must name cases here.
TEST(FusedKernelGpuCases, EveryVariantFamilyTheDevicePlanRunsHasCases) {
  std::ifstream plan(std::string(COMFUSE_SOURCE_DIR) + "/benchmarks/device_plan.sh");
  ASSERT_TRUE(plan) << "benchmarks/device_plan.sh";
  const std::string text((std::istreambuf_iterator<char>(plan)), std::istreambuf_iterator<char>());
  const std::vector<Case> all = cases();
  const std::regex call(R"(gpu_variants ([a-z_]+_)\b)");
  int families = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), call); it != std::sregex_iterator(); ++it) {
    const std::string prefix = (*it)[1];
    ++families;
    const auto count =
        std::count_if(all.begin(), all.end(), [&](const Case& c) { return c.label.rfind(prefix, 0) == 0; });
    std::cout << prefix << ": " << count << " cases\n";
    EXPECT_GT(count, 0) << "device_plan.sh runs '" << prefix << "' variants, but no case's label begins so";
  }
  EXPECT_GE(families, 5);  // the plan's calls were found
}

class FusedKernelGpuTest : public gpu_test::GpuTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(FusedKernelGpuTest, EveryScheduleAndShapeMatchesTheReference) {
  std::vector<Case> all = cases();
  std::erase_if(all, [&](const Case& c) { return c.workload != GetParam(); });
  ASSERT_GT(all.size(), 4u);
  const std::uint64_t seed =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::cout << "random seed " << seed << "\n";

  // Plan, schedule and emit on the host first; compile on all cores.
  struct Prepared {
    te::Program program;
    KernelSource source;
    std::unique_ptr<FusedKernel> kernel;
    std::string error;
  };
  std::vector<Prepared> prepared;
  // COMFUSE_GPU_CASES=substring narrows the run to matching "workload/label" cases (for debugging one
  // kernel); COMFUSE_GPU_SHARD=i/n to every n-th of those from the i-th (0 <= i < n), for runs in parts.
  const char* filter = std::getenv("COMFUSE_GPU_CASES");
  int shard = 0, shards = 1;
  if (const char* text = std::getenv("COMFUSE_GPU_SHARD")) {
    char slash = 0;
    std::istringstream in(text);
    in >> shard >> slash >> shards;
    ASSERT_TRUE(in && in.eof() && slash == '/' && shards > 0 && shard >= 0 && shard < shards)
        << "COMFUSE_GPU_SHARD='" << text << "': expected i/n with 0 <= i < n";
  }
  std::vector<Case> runnable;
  std::size_t matching = 0;
  for (const Case& c : all) {
    if (filter != nullptr && (c.workload + "/" + c.label).find(filter) == std::string::npos) continue;
    if (matching++ % static_cast<std::size_t>(shards) != static_cast<std::size_t>(shard)) continue;
    te::Program program = build(c);
    schedule::FusionPlan plan = schedule::plan_fusion(program);
    Schedule s = c.label.rfind("default", 0) == 0 ? schedule::default_schedule(plan) : c.schedule;
    try {
      schedule::check_legal(plan, s);
    } catch (const CompileError& error) {
      std::cout << "skip " << c.workload << "/" << c.label << ": " << error.what() << "\n";
      continue;
    }
    KernelSource source = emit_kernel(plan, s, "sha256:" + std::string(64, '0'));
    prepared.push_back({program, std::move(source), nullptr, {}});
    runnable.push_back(c);
  }
  std::vector<runtime::CompiledProgram> compiled(prepared.size());
  {
    std::vector<std::thread> workers;
    std::atomic<std::size_t> next{0};
    const unsigned threads = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned w = 0; w < threads; ++w) {
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < prepared.size(); i = next++) {
          try {
            runtime::CompileOptions options;
            options.program_name = prepared[i].source.name + ".cu";
            compiled[i] = runtime::compile(prepared[i].source.source, options);
          } catch (const std::exception& error) {
            prepared[i].error = error.what();
          }
        }
      });
    }
    for (std::thread& t : workers) t.join();
  }

  int failures = 0;
  for (std::size_t index = 0; index < runnable.size(); ++index) {
    const Case& c = runnable[index];
    Prepared& p = prepared[index];
    const std::string name = c.workload + "/" + c.label + " [" + schedule::to_string(p.source.schedule) + "]";
    if (!p.error.empty()) {
      ADD_FAILURE() << name << ": compile failed: " << p.error.substr(0, 2000);
      ++failures;
      continue;
    }
    std::vector<te::HostBuffer> inputs;
    std::vector<const void*> data;
    for (std::size_t i = 0; i < p.program.inputs().size(); ++i) {
      const te::Tensor& t = p.program.inputs()[i];
      inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), seed + 7919 * index + i));
    }
    for (const te::HostBuffer& b : inputs) data.push_back(b.data());
    try {
      FusedKernel kernel(context(), p.program, p.source, std::move(compiled[index]));
      DeviceBindings bindings = kernel.bind(data);
      // A kernel whose workspace carries counters from launch to launch (global_exchange zeroes them as it
      // ends) runs twice, and the second run is checked.
      for (int run = 0; run < (p.source.zeroed_workspace ? 2 : 1); ++run) {
        for (auto& out : bindings.outputs) out.fill_bytes(0xFF);  // NaN in bf16, f16 and f32
        kernel.launch(bindings);
        context().synchronize();
      }
      const std::vector<te::HostBuffer> gpu = download_outputs(p.program, bindings);
      const ReferenceCheck check = check_against_reference(p.program, inputs, gpu, 1e-2, c.full_rows);
      std::cout << name << "\n" << check.detail;
      if (!check.ok) {
        ++failures;
        ADD_FAILURE() << name << ": rel_err " << check.max_rel_error << ", non-finite " << check.non_finite
                      << " (seed " << seed << ")\n"
                      << check.detail;
      }
    } catch (const std::exception& error) {
      ++failures;
      ADD_FAILURE() << name << ": " << error.what();
      break;  // a faulting kernel poisons the context: stop here
    }
  }
  std::cout << runnable.size() << " kernels, " << failures << " failures\n";
}

INSTANTIATE_TEST_SUITE_P(Workloads, FusedKernelGpuTest, ::testing::ValuesIn(kWorkloads),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace comfuse::codegen
