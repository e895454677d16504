// finish_step_loads: a wide finish loads every group's stash words of a step before the step's first store.
// Checked where it matters, in the PTX NVRTC makes of the finish kernels of the forms the shipped winners
// take (the schedules below are theirs, at small M and K): without the knob a step's second stash load comes
// after its first store; with it both come before. And in the cubin: no spills.
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
  const char* schedule;    // JSON
  const char* stash_load;  // the PTX of a 16-byte stash load, and of an output's store
  const char* store;
};

const std::vector<Winner> kWinners = {
    // post-LN K1024 N1024: a bf16 stash with streaming hints (the loads and stores are volatile asm)
    {"post_layernorm", 1024,
     R"({"bf16_stash": true, "bk": 64, "bm": 128, "bn": 256, "box_reads": true, "carried": "l2_stash",
         "cluster_n": 1, "interior_tiles": true, "multicast_b": true, "one_input_slot": true,
         "one_pass_variance": true, "persistent": true, "raster_group_m": 8, "reduction": "deferred",
         "staged_pairs": true, "stages": 3, "stash_in_slot": true, "streaming_hints": true, "tma_inputs": true,
         "tma_store": true, "vector_loads": true, "warp_roles": "cooperative", "wide_finish": true})",
     "ld.global.cs.v4.u32", "st.global.cs.v4.u32"},
    // softmax N8192: the terms in bf16, four warps a row, plain loads and stores
    {"gemm_softmax", 8192,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "finish_row_split": true, "interior_tiles": true, "multicast_b": true, "online_softmax": true,
         "persistent": true, "raster_group_m": 8, "reduction": "deferred", "stages": 4, "stash_terms": true,
         "vector_loads": true, "warp_roles": "ping_pong", "wide_finish": true})",
     "ld.global.nc.v4.u32", "st.global.v4.u32"},
    // gelu-LN: an f32 stash, two 16-byte words a group
    {"gemm_gelu_layernorm", 4096,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "multicast_b": true, "one_pass_variance": true, "persistent": true, "raster_group_m": 8,
         "reduction": "deferred", "stages": 4, "vector_loads": true, "warp_roles": "ping_pong",
         "wide_finish": true})",
     "ld.global.nc.v4.f32", "st.global.v4.u32"},
};

// The finish kernel's PTX: from its .entry to the end of the text.
std::string finish_ptx(const KernelSource& source) {
  runtime::CompileOptions options;
  options.output = runtime::OutputKind::ptx;
  options.program_name = source.name + ".cu";
  const std::string ptx = runtime::compile(source.source, options).image;
  const std::size_t entry = ptx.find(".entry " + source.finish_name);
  EXPECT_NE(entry, std::string::npos) << source.finish_name;
  return entry == std::string::npos ? "" : ptx.substr(entry);
}

// Where the n-th (from 1) occurrence of `part` begins in `text` (npos when there are fewer).
std::size_t nth(const std::string& text, const std::string& part, int n) {
  std::size_t at = std::string::npos;
  for (std::size_t from = 0; n > 0; --n, from = at + 1) {
    at = text.find(part, from);
    if (at == std::string::npos) return at;
  }
  return at;
}

TEST(FinishStepLoads, AStepsStashLoadsComeBeforeItsFirstStore) {
  for (const Winner& w : kWinners) {
    const schedule::FusionPlan plan = plan_of(w.workload, 256, 64, w.n);
    Schedule s = schedule::schedule_from_json(nlohmann::json::parse(w.schedule), w.workload);
    const std::string before = finish_ptx(emit_kernel(plan, s, kKey));
    s.finish_step_loads = true;
    const KernelSource source = emit_kernel(plan, s, kKey);
    const std::string after = finish_ptx(source);
    // f32: a group is two words, so a step's groups are four loads; 16-bit: two.
    const int loads = std::string(w.stash_load).find("f32") != std::string::npos ? 4 : 2;
    EXPECT_GT(nth(before, w.stash_load, loads), before.find(w.store)) << w.workload << ": without the knob";
    EXPECT_LT(nth(after, w.stash_load, loads), after.find(w.store)) << w.workload << ": with it";
    EXPECT_TRUE(contains(source.source, "  // the step's words of stash 0")) << w.workload;

    runtime::CompileOptions options;
    options.program_name = source.name + ".cu";
    const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
    const runtime::ResourceUsage& finish = compiled.kernels.at(source.finish_name);
    EXPECT_EQ(finish.spill_store_bytes, 0) << w.workload << "\n" << compiled.log;
    EXPECT_EQ(finish.spill_load_bytes, 0) << w.workload;
  }
}

TEST(FinishStepLoads, NeedsTheWideFinish) {
  const schedule::FusionPlan plan = plan_of("gemm_softmax", 256, 64, 8192);
  Schedule s = schedule::schedule_from_json(nlohmann::json::parse(kWinners[1].schedule), "softmax");
  s.finish_step_loads = true;
  s.wide_finish = false;
  try {
    schedule::check_legal(plan, s);
    ADD_FAILURE() << "finish_step_loads without the wide finish";
  } catch (const CompileError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("finish_step_loads=true loads a wide finish's groups of a step together, which needs "
                        "wide_finish=true (reduction=deferred)"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace comfuse::codegen
