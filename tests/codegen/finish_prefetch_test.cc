// finish_full_occupancy: the finish kernel of a deferred reduction declared with eight CTAs an SM as its
// minimum, compiled with NVRTC here (no GPU): ptxas holds it to 32 registers a thread without spilling, in
// the forms the shipped winners take (the schedules below are theirs, at small M and K), and the main kernel
// is the same text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::Schedule;
using source_text::contains;
using test_programs::kKey;
using test_programs::plan_of;

struct Winner {
  const char* workload;
  std::int64_t n;
  const char* schedule;  // JSON
  int stash_bytes;       // of an element
};

// The finish kernels profiled on 2026-12-06: softmax's bf16 terms, post-LN's bf16 stash and gelu-LN's f32
// stash.
const std::vector<Winner> kWinners = {
    {"gemm_softmax", 8192,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "finish_row_split": true, "interior_tiles": true, "multicast_b": true, "online_softmax": true,
         "persistent": true, "raster_group_m": 8, "reduction": "deferred", "stages": 4, "stash_terms": true,
         "vector_loads": true, "warp_roles": "ping_pong", "wide_finish": true})",
     2},
    {"post_layernorm", 1024,
     R"({"bf16_stash": true, "bk": 64, "bm": 128, "bn": 256, "box_reads": true, "carried": "l2_stash",
         "cluster_n": 1, "interior_tiles": true, "multicast_b": true, "one_input_slot": true,
         "one_pass_variance": true, "persistent": true, "raster_group_m": 8, "reduction": "deferred",
         "staged_pairs": true, "stages": 3, "stash_in_slot": true, "streaming_hints": true, "tma_inputs": true,
         "tma_store": true, "vector_loads": true, "warp_roles": "cooperative", "wide_finish": true})",
     2},
    {"gemm_gelu_layernorm", 4096,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "multicast_b": true, "one_pass_variance": true, "persistent": true, "raster_group_m": 8,
         "reduction": "deferred", "stages": 4, "vector_loads": true, "warp_roles": "ping_pong",
         "wide_finish": true})",
     4},
};

TEST(FinishPrefetch, TheWinnersFinishKernelsPrefetchTheirStashRowsAndCompileWithoutSpills) {
  for (const Winner& w : kWinners) {
    const schedule::FusionPlan plan = plan_of(w.workload, 256, 64, w.n);
    Schedule s = schedule::schedule_from_json(nlohmann::json::parse(w.schedule), w.workload);
    s.finish_prefetch = true;
    const KernelSource source = emit_kernel(plan, s, kKey);
    const std::string finish = source.source.substr(source.source.find(source.finish_name + "("));
    EXPECT_TRUE(
        contains(source.source, "__device__ __forceinline__ void prefetch_l2(const void* p, u32 bytes)"))
        << w.workload;
    // Before the partials: the row's first lane, one bulk prefetch of the row.
    const std::string prefetch =
        "  if (row_writer) {\n    prefetch_l2(&stash[((size_t)0 * M + row) * N], N * " +
        std::to_string(w.stash_bytes) + ");\n  }\n";
    EXPECT_TRUE(contains(finish, prefetch)) << w.workload << "\n" << finish.substr(0, 1500);
    EXPECT_LT(finish.find(prefetch), finish.find("The row's partials")) << w.workload;
    runtime::CompileOptions options;
    options.program_name = source.name + ".cu";
    const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
    for (const std::string& kernel : {source.name, source.finish_name}) {
      const runtime::ResourceUsage& usage = compiled.kernels.at(kernel);
      EXPECT_EQ(usage.spill_store_bytes, 0) << w.workload << " " << kernel << "\n" << compiled.log;
      EXPECT_EQ(usage.spill_load_bytes, 0) << w.workload << " " << kernel;
    }
    // Without the knob: no prefetch in the finish kernel.
    s.finish_prefetch = false;
    const KernelSource plain = emit_kernel(plan, s, kKey);
    EXPECT_FALSE(contains(plain.source.substr(plain.source.find(plain.finish_name + "(")), "prefetch_l2("))
        << w.workload;
  }
}

TEST(FinishPrefetch, NeedsADeferredReductionWithTheWideFinish) {
  const schedule::FusionPlan plan = plan_of("gemm_softmax", 256, 64, 8192);
  Schedule s = schedule::schedule_from_json(nlohmann::json::parse(kWinners[0].schedule), "softmax");
  s.finish_prefetch = true;
  s.wide_finish = false;
  try {
    schedule::check_legal(plan, s);
    ADD_FAILURE() << "finish_prefetch without the wide finish";
  } catch (const CompileError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("finish_prefetch=true prefetches a finish kernel's stash rows, which needs "
                        "reduction=deferred and wide_finish=true (reduction=deferred, wide_finish=false)"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace comfuse::codegen
