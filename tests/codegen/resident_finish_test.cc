// resident_finish: a deferred reduction's finish inside the main kernel. Checked without a GPU: what the
// launch is told (no finish kernel, a cooperative grid, a workspace zeroed once with the ready words and the
// queue after the partials), what the source holds (the finish on the producer's idle warps and after the
// consumers' tiles, the raises), the PTX's release and acquire, and the cubin's registers: the producer
// warpgroup keeps 56 and nothing spills. The GPU test's `resident_finish_` cases run it against the
// reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/kernel_source.h"
#include "codegen/resident_finish.h"
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

struct Form {
  const char* workload;
  std::int64_t n;
  const char* schedule;  // JSON: a shipped winner's, at small M and K
};

const std::vector<Form> kForms = {
    // post-LN K1024 N1024: cooperative 128 x 256, CTA pairs (multicast_b), the stash by TMA over the slot
    {"post_layernorm", 1024,
     R"({"bf16_stash": true, "bk": 64, "bm": 128, "bn": 256, "box_reads": true, "carried": "l2_stash",
         "cluster_n": 1, "interior_tiles": true, "multicast_b": true, "one_input_slot": true,
         "one_pass_variance": true, "persistent": true, "raster_group_m": 8, "reduction": "deferred",
         "staged_pairs": true, "stages": 3, "stash_in_slot": true, "streaming_hints": true, "tma_inputs": true,
         "tma_store": true, "vector_loads": true, "warp_roles": "cooperative", "wide_finish": true})"},
    // gelu-LN: ping-pong 64 x 256, an f32 stash stored element-wise
    {"gemm_gelu_layernorm", 4096,
     R"({"approximate_math": true, "bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
         "multicast_b": true, "one_pass_variance": true, "persistent": true, "raster_group_m": 8,
         "reduction": "deferred", "stages": 4, "vector_loads": true, "warp_roles": "ping_pong",
         "wide_finish": true})"},
    // RMSNorm K4096 N4096: cooperative, no cluster (so a cooperative launch), the narrow finish
    {"post_rmsnorm", 4096,
     R"({"batched_reads": true, "bf16_stash": true, "bk": 64, "bm": 128, "bn": 256, "carried": "l2_stash",
         "cluster_n": 1, "deep_reads": true, "interior_tiles": true, "persistent": true, "raster_group_m": 8,
         "reduction": "deferred", "stages": 4, "tma_inputs": true, "vector_loads": true,
         "warp_roles": "cooperative"})"},
};

constexpr std::int64_t kM = 1000;  // 8 row blocks of 128 (the last short), 125 items

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ResidentFinish, TheMainKernelFinishesItsRowsAndNoFinishKernelIsLaunched) {
  for (const Form& f : kForms) {
    const schedule::FusionPlan plan = plan_of(f.workload, kM, 64, f.n);
    Schedule s = schedule::schedule_from_json(nlohmann::json::parse(f.schedule), f.workload);
    const KernelSource separate = emit_kernel(plan, s, kKey);
    s.resident_finish = true;
    const KernelSource source = emit_kernel(plan, s, kKey);
    SCOPED_TRACE(f.workload);
    ASSERT_FALSE(separate.finish_name.empty());
    EXPECT_TRUE(source.finish_name.empty());
    EXPECT_EQ(source.launch.finish_grid_x, 0);
    EXPECT_FALSE(contains(source.source, "_finish("));
    // Every CTA resident: cooperative where there is no cluster (a grid of clusters is sized to those that
    // run).
    EXPECT_EQ(source.launch.cooperative, source.launch.cluster_x == 1);
    EXPECT_TRUE(source.zeroed_workspace);
    const std::int64_t m_blocks = (kM + s.bm - 1) / s.bm;
    EXPECT_EQ(source.stash_bytes, (separate.stash_bytes + 15) / 16 * 16 + resident_finish_bytes(m_blocks));
    // The producer's warps 1-3 from the start, the consumers after their tiles; a raise after each tile's
    // next mainloop and one after the last.
    EXPECT_EQ(count(source.source, "finish_rows();"), 2u);
    EXPECT_EQ(count(source.source, "ready_raise(&ready_words[ready_block]);"), 2u);
    EXPECT_TRUE(contains(source.source, "if (threadIdx.x >= 32) {"));
    EXPECT_EQ(contains(source.source, "bulk_wait_all();  // the tile's TMA stores"), s.tma_store);

    runtime::CompileOptions options;
    options.program_name = source.name + ".cu";
    options.output = runtime::OutputKind::ptx;
    const std::string ptx = runtime::compile(source.source, options).image;
    EXPECT_TRUE(contains(ptx, "red.release.gpu.global.add.u32"));
    EXPECT_TRUE(contains(ptx, "ld.acquire.gpu.global.u32"));
    EXPECT_TRUE(contains(ptx, "setmaxnreg.dec.sync.aligned.u32 56"));
    EXPECT_TRUE(contains(ptx, "setmaxnreg.inc.sync.aligned.u32 224"));
    options.output = runtime::OutputKind::cubin;
    const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
    const runtime::ResourceUsage& main = compiled.kernels.at(source.name);
    EXPECT_EQ(main.spill_store_bytes, 0) << compiled.log;
    EXPECT_EQ(main.spill_load_bytes, 0);
  }
}

TEST(ResidentFinish, NeedsADeferredFinishOnThePersistentGridWithNoSharedMemoryOfItsOwn) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", kM, 64, 4096);  // rows a split finish takes
  const Schedule winner = schedule::schedule_from_json(nlohmann::json::parse(kForms[0].schedule), "post-LN");
  struct Bad {
    const char* what;
    void (*apply)(Schedule&);
    const char* names;
  };
  const std::vector<Bad> bad = {
      {"a grid of tiles", [](Schedule& s) { s.persistent = false; }, "persistent=false"},
      {"a split row", [](Schedule& s) { s.finish_row_split = true; }, "finish_row_split=true"},
      {"a reversed order", [](Schedule& s) { s.reverse_finish = true; }, "reverse_finish=true"},
  };
  for (const Bad& b : bad) {
    Schedule s = winner;
    s.resident_finish = true;
    b.apply(s);
    try {
      schedule::check_legal(plan, s);
      ADD_FAILURE() << "resident_finish with " << b.what;
    } catch (const CompileError& error) {
      const std::string message = error.what();
      EXPECT_TRUE(contains(message, "resident_finish=true runs a deferred reduction's finish")) << message;
      EXPECT_TRUE(contains(message, b.names)) << message;
    }
  }
  // The softmax's terms in bf16 (stash_terms): their factor table is the finish kernel's shared memory.
  const schedule::FusionPlan softmax = plan_of("gemm_softmax", kM, 64, 4096);
  Schedule terms = schedule::schedule_from_json(
      nlohmann::json::parse(R"({"bk": 64, "bm": 64, "bn": 256, "carried": "l2_stash", "cluster_n": 1,
          "online_softmax": true, "persistent": true, "raster_group_m": 8, "reduction": "deferred",
          "stages": 4, "stash_terms": true, "warp_roles": "ping_pong"})"),
      "softmax");
  EXPECT_NO_THROW(schedule::check_legal(softmax, terms));
  terms.resident_finish = true;
  EXPECT_THROW(schedule::check_legal(softmax, terms), CompileError);
  Schedule s = winner;
  s.resident_finish = true;
  EXPECT_NO_THROW(schedule::check_legal(plan, s));
  EXPECT_TRUE(schedule::resident_finish_applies(s));
  s.reduction = schedule::ReductionPlacement::kCta;
  EXPECT_FALSE(schedule::resident_finish_applies(s));
}

}  // namespace
}  // namespace comfuse::codegen
