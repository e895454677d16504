// Every suite workload and a few operators written in the DSL, under a spread of legal schedules at reduced
// and odd shapes, compile with NVRTC to an sm_90a cubin (no GPU needed). Each test compiles its kernels on
// two threads, one nvrtcProgram per thread.
#include <nvrtc.h>

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <sstream>
#include <thread>

#include "codegen/fused_kernel.h"
#include "codegen/kernel_source.h"
#include "codegen/test_programs.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;

const std::string kKey = "sha256:5eed00000000000000000000000000000000000000000000000000000000cafe";

struct Knobs {
  int bm = 128, bn = 128, stages = 4, cluster_n = 1;
  WarpRoles roles = WarpRoles::kCooperative;
  ValueHome carried = ValueHome::kRegisters;
  int raster_group_m = 8;
  bool vector_loads = false;
};

Schedule make_schedule(const Knobs& k) {
  Schedule s;
  s.bm = k.bm;
  s.bn = k.bn;
  s.stages = k.stages;
  s.cluster_n = k.cluster_n;
  s.warp_roles = k.roles;
  s.reduction = k.cluster_n > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta;
  s.carried = k.carried;
  s.raster_group_m = k.raster_group_m;
  s.vector_loads = k.vector_loads;
  return s;
}

struct Shape {
  std::int64_t m, k, n;
};

struct Case {
  std::string what;
  te::Program program;
  std::optional<Knobs> knobs;  // the plan's default schedule when absent (and no `schedule`)
  std::optional<Schedule> schedule = std::nullopt;  // a schedule as it is, before `knobs`
};

struct Outcome {
  bool ok = false;
  std::size_t cubin_bytes = 0;
  bool has_entry_point = false;  // and the finish kernel's, if the source has one
  std::string message;           // log and source head on failure
};

std::string head_of(const std::string& source, int lines) {
  std::istringstream in(source);
  std::string line, head;
  for (int i = 0; i < lines && std::getline(in, line); ++i) head += line + "\n";
  return head;
}

Outcome compile(const KernelSource& kernel) {
  Outcome outcome;
  nvrtcProgram program = nullptr;
  nvrtcResult result =
      nvrtcCreateProgram(&program, kernel.source.c_str(), (kernel.name + ".cu").c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    outcome.message = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(result);
    return outcome;
  }
  const char* options[] = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device"};
  result = nvrtcCompileProgram(program, 3, options);
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  if (result == NVRTC_SUCCESS && nvrtcGetCUBINSize(program, &outcome.cubin_bytes) == NVRTC_SUCCESS &&
      outcome.cubin_bytes > 0) {
    std::string cubin(outcome.cubin_bytes, '\0');
    nvrtcGetCUBIN(program, cubin.data());
    outcome.has_entry_point =
        cubin.find(kernel.name) != std::string::npos &&
        (kernel.finish_name.empty() || cubin.find(kernel.finish_name) != std::string::npos);
    outcome.ok = true;
  } else {
    outcome.message = std::string("NVRTC: ") + nvrtcGetErrorString(result) + "\n--- log ---\n" + log +
                      "\n--- source head ---\n" + head_of(kernel.source, 40);
  }
  nvrtcDestroyProgram(&program);
  return outcome;
}

// Plans, schedules and emits each case here (errors are reported per case), then compiles on two threads.
void compile_all(const std::vector<Case>& cases) {
  std::vector<KernelSource> kernels;
  std::vector<std::string> names;
  for (const Case& c : cases) {
    try {
      const FusionPlan plan = schedule::plan_fusion(c.program);
      const Schedule s = c.schedule ? *c.schedule
                         : c.knobs  ? make_schedule(*c.knobs)
                                    : schedule::default_schedule(plan);
      kernels.push_back(emit_kernel(plan, s, kKey));
      names.push_back(c.what + " [" + schedule::to_string(s) + "]");
      EXPECT_LE(kernels.back().launch.shared_bytes, schedule::TargetLimits{}.max_shared_memory_per_block)
          << names.back();
    } catch (const std::exception& error) {
      ADD_FAILURE() << c.what << ": " << error.what();
    }
  }
  std::vector<Outcome> outcomes(kernels.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < kernels.size(); i = next++) outcomes[i] = compile(kernels[i]);
  };
  std::thread second(worker);
  worker();
  second.join();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_TRUE(outcomes[i].ok) << names[i] << "\n" << outcomes[i].message;
    if (!outcomes[i].ok) continue;
    EXPECT_GT(outcomes[i].cubin_bytes, 0u) << names[i];
    EXPECT_TRUE(outcomes[i].has_entry_point) << names[i] << ": no '" << kernels[i].name << "' in the cubin";
  }
}

te::Program workload(const std::string& name, Shape s) {
  return test_programs::workload(name, s.m, s.k, s.n);
}

constexpr Shape kReduced{256, 128, 512};
constexpr Shape kOdd{127, 72, 257};
constexpr Shape kTiny{1, 40, 1000};

TEST(KernelCompile, GemmAndGemmBiasRelu) {
  compile_all({
      {"gemm reduced", workload("gemm", kReduced), std::nullopt},
      {"gemm odd ping-pong", workload("gemm", kOdd),
       Knobs{.bm = 64, .bn = 128, .stages = 3, .roles = WarpRoles::kPingPong, .raster_group_m = 1}},
      {"gemm tiny", workload("gemm", kTiny), Knobs{.bm = 64, .bn = 64, .stages = 2}},
      {"gemm_bias_relu reduced", workload("gemm_bias_relu", kReduced),
       Knobs{.bm = 64, .bn = 256, .stages = 5}},
      {"gemm_bias_relu odd ping-pong", workload("gemm_bias_relu", kOdd),
       Knobs{.bm = 64, .bn = 256, .stages = 4, .roles = WarpRoles::kPingPong}},
      {"gemm_bias_relu tiny", workload("gemm_bias_relu", kTiny), Knobs{.bm = 128, .bn = 128, .stages = 2}},
  });
}

TEST(KernelCompile, PostLayerNorm) {
  compile_all({
      {"reduced default", workload("post_layernorm", kReduced), std::nullopt},
      {"odd cluster 4", workload("post_layernorm", kOdd),
       Knobs{.bm = 64, .bn = 64, .stages = 5, .cluster_n = 4, .carried = ValueHome::kL2Stash}},
      {"tiny cluster 8 registers", workload("post_layernorm", kTiny),
       Knobs{.bm = 64, .bn = 128, .cluster_n = 8}},
      {"reduced cta", workload("post_layernorm", kReduced),
       Knobs{.bm = 128, .bn = 256, .stages = 3, .carried = ValueHome::kL2Stash}},
  });
}

TEST(KernelCompile, VectorLoads) {
  constexpr Shape kEven{127, 72, 1000};
  compile_all({
      {"post_layernorm cta stash", workload("post_layernorm", kEven),
       Knobs{.bm = 64, .bn = 128, .carried = ValueHome::kL2Stash, .vector_loads = true}},
      {"post_layernorm ping-pong cluster stash", workload("post_layernorm", kReduced),
       Knobs{.bm = 64,
             .bn = 128,
             .cluster_n = 2,
             .roles = WarpRoles::kPingPong,
             .carried = ValueHome::kL2Stash,
             .vector_loads = true}},
      {"gemm_softmax cta stash", workload("gemm_softmax", kEven),
       Knobs{.bm = 64, .bn = 128, .carried = ValueHome::kL2Stash, .vector_loads = true}},
      {"gemm_bias_relu", workload("gemm_bias_relu", kEven),
       Knobs{.bm = 128, .bn = 256, .vector_loads = true}},
  });
}

TEST(KernelCompile, PostRmsNormAndLayerNormRelu) {
  compile_all({
      {"post_rmsnorm odd cta", workload("post_rmsnorm", kOdd),
       Knobs{.bm = 128, .bn = 64, .stages = 5, .carried = ValueHome::kL2Stash}},
      {"post_rmsnorm reduced cluster 4 registers", workload("post_rmsnorm", kReduced),
       Knobs{.bm = 128, .bn = 128, .cluster_n = 4}},
      {"post_rmsnorm tiny", workload("post_rmsnorm", kTiny), std::nullopt},
      {"gemm_layernorm_relu reduced cluster 2", workload("gemm_layernorm_relu", kReduced),
       Knobs{.bm = 128, .bn = 128, .stages = 5, .cluster_n = 2, .carried = ValueHome::kL2Stash}},
      {"gemm_layernorm_relu odd", workload("gemm_layernorm_relu", kOdd), std::nullopt},
      {"gemm_layernorm_relu small cta registers", workload("gemm_layernorm_relu", Shape{64, 64, 64}),
       Knobs{.bm = 64, .bn = 64, .stages = 2}},
  });
}

TEST(KernelCompile, GemmGeluLayerNorm) {
  compile_all({
      {"reduced", workload("gemm_gelu_layernorm", kReduced), std::nullopt},
      {"odd cta", workload("gemm_gelu_layernorm", kOdd),
       Knobs{.bm = 128, .bn = 128, .stages = 3, .carried = ValueHome::kL2Stash}},
  });
}

TEST(KernelCompile, Softmaxes) {
  compile_all({
      {"gemm_softmax reduced cluster 4", workload("gemm_softmax", kReduced),
       Knobs{.bm = 128, .bn = 128, .cluster_n = 4, .carried = ValueHome::kL2Stash}},
      {"gemm_softmax small cta registers", workload("gemm_softmax", Shape{64, 64, 64}),
       Knobs{.bm = 64, .bn = 64, .stages = 2}},
      {"gemm_softmax odd", workload("gemm_softmax", kOdd), std::nullopt},
      {"gemm_softmax tiny", workload("gemm_softmax", kTiny), std::nullopt},
      {"gemm_softcap_softmax reduced", workload("gemm_softcap_softmax", kReduced), std::nullopt},
      {"gemm_softcap_softmax odd cluster 4", workload("gemm_softcap_softmax", kOdd),
       Knobs{.bm = 64, .bn = 64, .stages = 3, .cluster_n = 4, .carried = ValueHome::kL2Stash}},
      {"gemm_softcap_softmax tiny cta", workload("gemm_softcap_softmax", kTiny),
       Knobs{.bm = 64, .bn = 64, .stages = 2, .carried = ValueHome::kL2Stash}},
  });
}

// Ping-pong 64 x 128 tiles, a softmax kept online and deferred, its f32 stash re-read in deep pairs.
Schedule deferred_online_softmax() {
  Schedule s = test_programs::deferred_ping_pong();
  s.vector_loads = s.online_softmax = s.batched_reads = s.deep_reads = true;
  return s;
}

// Cooperative 128 x 128 tiles, a layer norm's variance in one pass, deferred, its bf16 stash on the
// persistent grid.
Schedule deferred_one_pass_layer_norm() {
  Schedule s = make_schedule(Knobs{.bm = 128, .bn = 128, .carried = ValueHome::kL2Stash});
  s.reduction = ReductionPlacement::kDeferred;
  s.one_pass_variance = s.bf16_stash = s.persistent = true;
  return s;
}

TEST(KernelCompile, DeferredReductions) {
  // Two kernels in one source: the main kernel a tile a CTA, the finish kernel a warp a row.
  const Schedule online = deferred_online_softmax();
  Schedule one_pass = deferred_one_pass_layer_norm();
  one_pass.interior_tiles = true;
  Schedule rms = one_pass;
  rms.one_pass_variance = false;
  Schedule staged = one_pass;
  staged.tma_inputs = staged.tma_store = true;
  staged.stages = 2;
  Schedule split = online;
  split.finish_row_split = true;
  Schedule fast = online;
  fast.approximate_math = true;
  fast.vector_loads = false;  // N odd
  Schedule reciprocal = fast;
  reciprocal.reciprocal_division = true;
  Schedule fast_gelu = one_pass;
  fast_gelu.approximate_math = true;
  compile_all({
      {"gemm_softmax online, N even", workload("gemm_softmax", Shape{127, 72, 1000}), std::nullopt, online},
      {"gemm_softcap_softmax tiny online", workload("gemm_softcap_softmax", kTiny), std::nullopt, online},
      {"post_layernorm odd one pass, bf16 stash", workload("post_layernorm", kOdd), std::nullopt, one_pass},
      {"post_rmsnorm odd (two stages of its own)", workload("post_rmsnorm", kOdd), std::nullopt, rms},
      {"post_layernorm reduced, inputs and stash through TMA", workload("post_layernorm", kReduced),
       std::nullopt, staged},
      {"gemm_softmax online, four warps a row of 2100", workload("gemm_softmax", Shape{77, 40, 2100}),
       std::nullopt, split},
      {"gemm_softcap_softmax odd online, exp and tanh approximate", workload("gemm_softcap_softmax", kOdd),
       std::nullopt, fast},
      {"gemm_gelu_layernorm odd one pass, tanh approximate", workload("gemm_gelu_layernorm", kOdd),
       std::nullopt, fast_gelu},
      {"gemm_softcap_softmax odd online, the cap's division a multiplication",
       workload("gemm_softcap_softmax", kOdd), std::nullopt, reciprocal},
  });
}

TEST(KernelCompile, StashedTermsAndTheWideFinish) {
  // A softmax's terms stashed in bf16 (stash_terms) and the finish kernel's eight columns a lane
  // (wide_finish), alone and together, over bf16 and f32 stashes, split finish kernels and a causal mask.
  const Schedule online = deferred_online_softmax();
  Schedule terms = online;
  terms.stash_terms = true;
  Schedule fast_terms = terms;
  fast_terms.approximate_math = fast_terms.reciprocal_division = fast_terms.interior_tiles = true;
  fast_terms.vector_loads = false;  // N odd
  Schedule split_terms = terms;
  split_terms.finish_row_split = split_terms.multicast_b = true;
  Schedule masked_terms = terms;
  masked_terms.vector_loads = false;  // N odd
  Schedule wide_ln = deferred_one_pass_layer_norm();
  wide_ln.wide_finish = true;
  Schedule wide_terms = split_terms;
  wide_terms.wide_finish = true;
  Schedule wide_f32 = online;
  wide_f32.wide_finish = wide_f32.reverse_finish = true;
  Schedule kept_ln = wide_ln;  // the stash's stores with an L2 policy: bf16 pairs
  kept_ln.reverse_finish = kept_ln.stash_evict_last = true;
  Schedule streamed_ln = wide_ln;  // the finish kernel's stash loads and output stores as streaming
  streamed_ln.streaming_hints = true;
  Schedule streamed_terms = wide_terms;
  streamed_terms.streaming_hints = true;
  Schedule staged_terms = split_terms;  // the terms through the staging tile, stored by TMA
  staged_terms.tma_store = true;
  Schedule kept_terms = terms;  // the terms' bf16 pairs
  kept_terms.stash_evict_last = true;
  Schedule kept_bf16 = deferred_one_pass_layer_norm();  // bf16 elements (N odd)
  kept_bf16.stash_evict_last = true;
  Schedule kept_f32 = online;  // f32 elements (N odd)
  kept_f32.stash_evict_last = true;
  kept_f32.vector_loads = kept_f32.batched_reads = kept_f32.deep_reads = false;
  wide_f32.batched_reads = wide_f32.deep_reads = false;
  compile_all({
      {"gemm_softmax online, terms stashed, deep pair reads", workload("gemm_softmax", Shape{127, 72, 1000}),
       std::nullopt, terms},
      {"gemm_softcap_softmax odd, terms stashed, approximate, the cap multiplied, interior tiles",
       workload("gemm_softcap_softmax", kOdd), std::nullopt, fast_terms},
      {"gemm_softmax terms stashed, four warps a row, B multicast",
       workload("gemm_softmax", Shape{77, 40, 2100}), std::nullopt, split_terms},
      {"causal softmax f16, terms stashed", test_programs::masked_softmax_f16(127, 72, 257), std::nullopt,
       masked_terms},
      {"post_layernorm, wide finish over a bf16 stash", workload("post_layernorm", Shape{77, 40, 1000}),
       std::nullopt, wide_ln},
      {"gemm_softmax, wide finish, terms stashed, four warps a row",
       workload("gemm_softmax", Shape{77, 40, 2104}), std::nullopt, wide_terms},
      {"gemm_softmax terms stashed by the TMA store, B multicast",
       workload("gemm_softmax", Shape{77, 40, 2104}), std::nullopt, staged_terms},
      {"gemm_softmax, wide finish over an f32 stash", workload("gemm_softmax", Shape{127, 72, 1000}),
       std::nullopt, wide_f32},
      {"causal softmax f16, wide finish", test_programs::masked_softmax_f16(127, 72, 264), std::nullopt,
       wide_f32},
      {"post_layernorm, the stash kept in L2", workload("post_layernorm", Shape{77, 40, 1000}), std::nullopt,
       kept_ln},
      {"post_layernorm, wide finish with streaming hints", workload("post_layernorm", Shape{77, 40, 1000}),
       std::nullopt, streamed_ln},
      {"gemm_softmax, wide finish, terms stashed, streaming hints",
       workload("gemm_softmax", Shape{77, 40, 2104}), std::nullopt, streamed_terms},
      {"gemm_softmax, terms stashed and kept in L2", workload("gemm_softmax", Shape{127, 72, 1000}),
       std::nullopt, kept_terms},
      {"gemm_softcap_softmax odd, an f32 stash kept in L2", workload("gemm_softcap_softmax", kOdd),
       std::nullopt, kept_f32},
      {"post_layernorm odd, a bf16 stash kept in L2", workload("post_layernorm", kOdd), std::nullopt,
       kept_bf16},
  });
}

// A softmax's deferred form on a persistent grid of ping-pong 64 x 256 tiles, its online sum beside the max.
Schedule deferred_ping_pong_softmax() {
  Schedule s = make_schedule(Knobs{.bm = 64,
                                   .bn = 256,
                                   .roles = WarpRoles::kPingPong,
                                   .carried = ValueHome::kL2Stash,
                                   .vector_loads = true});
  s.reduction = ReductionPlacement::kDeferred;
  s.online_softmax = s.persistent = true;
  return s;
}

TEST(KernelCompile, MulticastB) {
  // Clusters of two row blocks sharing B: one tile a CTA, ping-pong pairs, the persistent grid, the TMA
  // store, and a deferred reduction with staged inputs; odd shapes give an odd number of row blocks.
  Schedule cooperative = make_schedule(Knobs{.bm = 128, .bn = 256});
  cooperative.multicast_b = true;
  Schedule persistent = cooperative;
  persistent.persistent = persistent.tma_store = true;
  persistent.stages = 3;
  Schedule ping_pong = make_schedule(Knobs{.bm = 64, .bn = 128, .roles = WarpRoles::kPingPong});
  ping_pong.multicast_b = true;
  Schedule softmax = deferred_ping_pong_softmax();
  softmax.multicast_b = true;
  Schedule staged = make_schedule(Knobs{.bm = 128, .bn = 128, .carried = ValueHome::kL2Stash});
  staged.reduction = ReductionPlacement::kDeferred;
  staged.one_pass_variance = staged.tma_inputs = staged.bf16_stash = staged.tma_store = staged.multicast_b =
      true;
  staged.stages = 2;
  compile_all({
      {"gemm odd, one tile a CTA", workload("gemm", kOdd), std::nullopt, cooperative},
      {"gemm reduced, persistent with the TMA store", workload("gemm", kReduced), std::nullopt, persistent},
      {"gemm_bias_relu odd ping-pong", workload("gemm_bias_relu", kOdd), std::nullopt, ping_pong},
      {"gemm_softmax deferred, persistent ping-pong", workload("gemm_softmax", Shape{127, 72, 1000}),
       std::nullopt, softmax},
      {"post_layernorm deferred, inputs and stash through TMA", workload("post_layernorm", kReduced),
       std::nullopt, staged},
  });
}

TEST(KernelCompile, EarlyHandoff) {
  // The ping-pong mainloop handed over before its last group retires: alternate column tiles (a persistent
  // GEMM with B multicast, a deferred softmax) and alternate row blocks (a persistent cluster form).
  Schedule gemm = make_schedule(Knobs{.bm = 64, .bn = 256, .roles = WarpRoles::kPingPong});
  gemm.persistent = gemm.multicast_b = gemm.tma_store = gemm.early_handoff = true;
  Schedule softmax = deferred_ping_pong_softmax();
  softmax.early_handoff = true;
  Schedule rows = make_schedule(Knobs{.bm = 64, .bn = 128, .roles = WarpRoles::kPingPong});
  rows.reduction = ReductionPlacement::kCluster;
  rows.cluster_n = 8;
  rows.persistent = rows.early_handoff = true;
  ASSERT_TRUE(rows.alternate_row_blocks());
  compile_all({
      {"gemm with tails, persistent ping-pong", workload("gemm", Shape{127, 72, 1000}), std::nullopt, gemm},
      {"gemm_softmax deferred, persistent ping-pong", workload("gemm_softmax", Shape{127, 72, 1000}),
       std::nullopt, softmax},
      {"post_layernorm, ping-pong on alternate row blocks", workload("post_layernorm", Shape{127, 72, 1000}),
       std::nullopt, rows},
  });
}

TEST(KernelCompile, StoreChunks) {
  // The TMA store 64 columns at a time, with the fourth pipeline stage it leaves room for: a persistent
  // cooperative GEMM (interior tiles: two copies of the loop), a ping-pong GEMM with bias and ReLU over three
  // boxes (BN = 192: the first buffer reused once), a deferred reduction's bf16 stash and a softmax's stashed
  // terms.
  Schedule gemm = make_schedule(Knobs{.bm = 128, .bn = 256, .stages = 4});
  gemm.persistent = gemm.tma_store = gemm.store_chunks = gemm.interior_tiles = true;
  Schedule three = make_schedule(Knobs{.bm = 64, .bn = 192, .stages = 4, .roles = WarpRoles::kPingPong});
  three.tma_store = three.store_chunks = true;
  Schedule deferred = make_schedule(Knobs{.bm = 128, .bn = 256, .stages = 4, .carried = ValueHome::kL2Stash});
  deferred.reduction = ReductionPlacement::kDeferred;
  deferred.one_pass_variance = deferred.bf16_stash = deferred.tma_store = deferred.store_chunks = true;
  deferred.persistent = true;
  Schedule terms = make_schedule(Knobs{.bm = 128, .bn = 256, .stages = 4, .carried = ValueHome::kL2Stash});
  terms.reduction = ReductionPlacement::kDeferred;
  terms.online_softmax = terms.stash_terms = terms.tma_store = terms.store_chunks = terms.persistent = true;
  compile_all({
      {"gemm reduced, persistent 128 x 256, four stages", workload("gemm", kReduced), std::nullopt, gemm},
      {"gemm_softmax deferred, its terms in chunks", workload("gemm_softmax", Shape{127, 72, 1000}),
       std::nullopt, terms},
      {"gemm_bias_relu 1000 wide, ping-pong 64 x 192", workload("gemm_bias_relu", Shape{127, 72, 1000}),
       std::nullopt, three},
      {"post_layernorm deferred, its stash in chunks", workload("post_layernorm", Shape{127, 72, 1024}),
       std::nullopt, deferred},
  });
}

TEST(KernelCompile, PackedRounding) {
  // 16-bit roundings by the packed conversion: a persistent GEMM stored by TMA, a deferred layer norm with
  // its bf16 stash over the staged residual, and a causal softmax in f16.
  Schedule gemm = make_schedule(Knobs{.bm = 128, .bn = 256, .stages = 3});
  gemm.persistent = gemm.tma_store = gemm.interior_tiles = gemm.packed_rounding = true;
  Schedule ln = make_schedule(Knobs{.bm = 128, .bn = 256, .stages = 3, .carried = ValueHome::kL2Stash});
  ln.reduction = ReductionPlacement::kDeferred;
  ln.one_pass_variance = ln.bf16_stash = ln.tma_store = ln.tma_inputs = ln.stash_in_slot = true;
  ln.one_input_slot = true;
  ln.persistent = ln.packed_rounding = true;
  Schedule f16 = deferred_online_softmax();
  f16.vector_loads = false;  // N odd
  f16.packed_rounding = true;
  // Shared-memory pointers the compiler knows to be shared: the same three, and a cluster form exchanging
  // rows through distributed shared memory.
  Schedule gemm_sp = gemm, ln_sp = ln, f16_sp = f16;
  gemm_sp.shared_pointers = ln_sp.shared_pointers = f16_sp.shared_pointers = true;
  Schedule cluster = make_schedule(Knobs{.bm = 64, .bn = 256, .stages = 3, .roles = WarpRoles::kPingPong});
  cluster.cluster_n = 4;
  cluster.reduction = ReductionPlacement::kCluster;
  cluster.one_pass_variance = cluster.carry_in_accumulator = cluster.shared_pointers = true;
  compile_all({
      {"gemm reduced, persistent 128 x 256, TMA store, shared pointers", workload("gemm", kReduced),
       std::nullopt, gemm_sp},
      {"post_layernorm deferred, stash over the slot, shared pointers",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, ln_sp},
      {"causal softmax f16, shared pointers", test_programs::masked_softmax_f16(127, 72, 257), std::nullopt,
       f16_sp},
      {"post_layernorm cluster of four, shared pointers", workload("post_layernorm", Shape{127, 72, 1024}),
       std::nullopt, cluster},
      {"gemm reduced, persistent 128 x 256, TMA store", workload("gemm", kReduced), std::nullopt, gemm},
      {"post_layernorm deferred, stash over the slot", workload("post_layernorm", Shape{127, 72, 1024}),
       std::nullopt, ln},
      {"causal softmax f16, deferred online", test_programs::masked_softmax_f16(127, 72, 257), std::nullopt,
       f16},
  });
}

TEST(KernelCompile, TmaStoreOverTheStagedResidual) {
  // Rows combined in the kernel, the output written over the staged residual and stored from there: the
  // suite's post-LN N = 1024 cluster form (ping-pong on alternate row blocks), and cooperative 128-row tiles
  // (the second warpgroup's rows at a_row0 = 64) with a two-pass variance.
  Schedule ping_pong =
      make_schedule(Knobs{.bm = 64, .bn = 256, .stages = 3, .cluster_n = 4, .roles = WarpRoles::kPingPong});
  ping_pong.persistent = ping_pong.one_pass_variance = ping_pong.carry_in_accumulator = true;
  ping_pong.interior_tiles = ping_pong.tma_inputs = ping_pong.tma_store = true;
  Schedule cooperative = make_schedule(Knobs{.bm = 128, .bn = 128, .stages = 3, .cluster_n = 8});
  cooperative.tma_inputs = cooperative.tma_store = true;
  compile_all({
      {"post_layernorm 1024 wide, cluster ping-pong", workload("post_layernorm", Shape{127, 72, 1024}),
       std::nullopt, ping_pong},
      {"post_layernorm 1024 wide, cooperative cluster of 8", workload("post_layernorm", Shape{127, 72, 1024}),
       std::nullopt, cooperative},
  });
}

// The suite's post-LN K = 1024 winner's form (ping-pong 64 x 256, persistent, B multicast) with its inputs
// staged in one slot and the fourth stage that frees room for.
Schedule deferred_one_slot() {
  Schedule s = make_schedule(Knobs{.bm = 64,
                                   .bn = 256,
                                   .stages = 4,
                                   .roles = WarpRoles::kPingPong,
                                   .carried = ValueHome::kL2Stash,
                                   .vector_loads = true});
  s.reduction = ReductionPlacement::kDeferred;
  s.persistent = s.one_pass_variance = s.interior_tiles = s.bf16_stash = true;
  s.multicast_b = s.tma_inputs = s.one_input_slot = true;
  return s;
}

TEST(KernelCompile, OneInputSlot) {
  // The deferred form in one slot, and a cooperative 128 x 128 tile walking its own tiles (not persistent).
  const Schedule ping_pong = deferred_one_slot();
  Schedule cooperative =
      make_schedule(Knobs{.bm = 128, .bn = 128, .stages = 4, .carried = ValueHome::kL2Stash});
  cooperative.reduction = ReductionPlacement::kDeferred;
  cooperative.one_pass_variance = cooperative.tma_inputs = cooperative.one_input_slot = true;
  compile_all({
      {"post_layernorm 1024 wide, deferred ping-pong, four stages",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, ping_pong},
      {"post_layernorm odd, deferred cooperative", workload("post_layernorm", Shape{127, 72, 1000}),
       std::nullopt, cooperative},
  });
}

TEST(KernelCompile, OneInputSlotInAClusterForm) {
  // The post-LN K = 1024 cluster form (ping-pong 64 x 256, clusters of 4, persistent) with the residual
  // alone staged, in one slot, and the fourth stage that frees room for; at a width with a tail as well.
  Schedule cluster =
      make_schedule(Knobs{.bm = 64, .bn = 256, .stages = 4, .cluster_n = 4, .roles = WarpRoles::kPingPong});
  cluster.persistent = cluster.one_pass_variance = cluster.carry_in_accumulator = true;
  cluster.interior_tiles = cluster.fenced_exchange_arrive = true;
  cluster.tma_inputs = cluster.unstaged_vectors = cluster.one_input_slot = true;
  Schedule resident = cluster;
  resident.unstaged_vectors = false;
  resident.resident_vectors = true;
  compile_all({
      {"post_layernorm 1024 wide, cluster of 4, one slot, four stages",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, cluster},
      {"post_layernorm 1024 wide, cluster of 4, resident vectors, one slot, four stages",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, resident},
      {"post_layernorm odd, cluster of 4, one slot, four stages",
       workload("post_layernorm", Shape{127, 72, 1000}), std::nullopt, cluster},
  });
}

TEST(KernelCompile, StagedPairs) {
  // Staged inputs read two columns a load: the deferred post-LN K = 1024 form in one slot with four stages,
  // and the in-kernel cluster form whose last stage stores its output over the staged residual.
  Schedule deferred = deferred_one_slot();
  deferred.staged_pairs = true;
  Schedule cluster = make_schedule(Knobs{
      .bm = 64, .bn = 256, .stages = 3, .cluster_n = 4, .roles = WarpRoles::kPingPong, .vector_loads = true});
  cluster.persistent = cluster.one_pass_variance = cluster.carry_in_accumulator = true;
  cluster.interior_tiles = cluster.tma_inputs = cluster.tma_store = cluster.staged_pairs = true;
  compile_all({
      {"post_layernorm 1024 wide, deferred ping-pong, staged pairs",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, deferred},
      {"post_layernorm 1024 wide, cluster of 4, staged pairs, stored in place",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, cluster},
  });
}

TEST(KernelCompile, StashInSlot) {
  // The stash over the staged residual, stored by TMA from the slot: the ping-pong form in one slot with
  // four stages, and the cooperative 128 x 256 tile with three and staged pairs, at a width with a tail.
  Schedule ping_pong = deferred_one_slot();
  ping_pong.tma_store = ping_pong.stash_in_slot = true;
  Schedule cooperative = ping_pong;
  cooperative.warp_roles = WarpRoles::kCooperative;
  cooperative.bm = 128;
  cooperative.stages = 3;
  cooperative.staged_pairs = true;
  // And with the residual's boxes loaded under an evict_first policy (streaming_hints), the wide finish.
  Schedule hinted = cooperative;
  hinted.bf16_stash = hinted.wide_finish = hinted.streaming_hints = true;
  hinted.batched_reads = hinted.deep_reads = false;
  // And the stash's boxes stored with an L2 evict_last policy beside the hints.
  Schedule kept = hinted;
  kept.stash_evict_last = true;
  compile_all({
      {"post_layernorm 1024 wide, deferred ping-pong, stash in the slot",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, ping_pong},
      {"post_layernorm odd, deferred cooperative 128 x 256, stash in the slot",
       workload("post_layernorm", Shape{127, 72, 1000}), std::nullopt, cooperative},
      {"post_layernorm odd, cooperative 128 x 256, stash in the slot, streaming hints",
       workload("post_layernorm", Shape{127, 72, 1000}), std::nullopt, hinted},
      {"post_layernorm odd, cooperative 128 x 256, stash in the slot kept in L2, streaming hints",
       workload("post_layernorm", Shape{127, 72, 1000}), std::nullopt, kept},
  });
}

// The post-LN winners' form: cooperative 128 x 256 with three stages, the stash stored from the staged slot,
// the finish kernel's wide walk reducing each row from the stash.
Schedule wide_finish_reductions() {
  Schedule wide = deferred_one_slot();
  wide.tma_store = wide.stash_in_slot = wide.staged_pairs = wide.box_reads = true;
  wide.warp_roles = WarpRoles::kCooperative;
  wide.bm = 128;
  wide.stages = 3;
  wide.bf16_stash = wide.wide_finish = wide.streaming_hints = wide.finish_reductions = true;
  wide.batched_reads = wide.deep_reads = false;
  return wide;
}

TEST(KernelCompile, FinishReductions) {
  // The finish kernel reducing its rows from the stash: the pairs walk over an f32 stash, the wide walk over
  // the cooperative stash-in-slot form with streaming hints, an RMSNorm (a plain sum of squares), pairs with
  // batched reads, whose first walk loads each pair as it goes (its stash pairs went undeclared before, and
  // NVRTC failed: the H100's GPU-test variants of 2026-12-06), and the wide and pairs walks over the
  // longest rows kept in registers (16 groups or 64 pairs a lane).
  Schedule pairs = deferred_one_pass_layer_norm();
  pairs.bf16_stash = false;
  pairs.finish_reductions = true;
  Schedule batched = pairs;
  batched.bn = 80;
  batched.vector_loads = batched.batched_reads = true;
  const Schedule wide = wide_finish_reductions();
  Schedule rms = deferred_one_pass_layer_norm();
  rms.one_pass_variance = false;  // no variance
  rms.finish_reductions = true;
  Schedule kept_pairs = rms;
  kept_pairs.vector_loads = kept_pairs.batched_reads = kept_pairs.deep_reads = true;
  compile_all({
      {"post_layernorm odd, finish reductions over an f32 stash", workload("post_layernorm", kOdd),
       std::nullopt, pairs},
      {"post_layernorm odd, cooperative stash in the slot, wide finish reductions",
       workload("post_layernorm", Shape{127, 72, 1000}), std::nullopt, wide},
      {"post_rmsnorm, finish reductions", workload("post_rmsnorm", Shape{77, 40, 1000}), std::nullopt, rms},
      {"post_layernorm, finish reductions over pairs with batched reads",
       workload("post_layernorm", Shape{77, 40, 1000}), std::nullopt, batched},
      {"post_layernorm N = 4096, wide finish reductions, the row kept in registers",
       workload("post_layernorm", Shape{77, 72, 4096}), std::nullopt, wide},
      {"post_rmsnorm N = 4096, finish reductions over pairs, the row kept in registers",
       workload("post_rmsnorm", Shape{77, 72, 4096}), std::nullopt, kept_pairs},
  });
}

TEST(KernelCompile, PersistentFinishKeepsTheFinishKernelsRegisters) {
  // The finish kernel's loop over rows: the compiler, left to itself, hoisted every address of a lane's
  // columns and the row vectors out of it (the N = 4096 row kept in registers: 122 registers to 255, one CTA
  // an SM). With the loop's opaque copies each form keeps its one-row kernel's CTAs an SM (its registers, in
  // the 64 K of an SM, allocated 8 a thread at a time).
  const auto ctas_an_sm = [](int registers) {
    return 65536 / (schedule::kFinishThreads * ((registers + 7) / 8 * 8));
  };
  const Schedule wide = wide_finish_reductions();
  const Schedule pairs = deferred_one_pass_layer_norm();
  struct Form {
    std::string what;
    std::int64_t n;
    Schedule one_row;
  };
  for (const auto& [what, n, one_row] : {Form{"N = 4096, wide, the row kept", 4096, wide},
                                         Form{"N = 1000, pairs over an f32 stash", 1000, pairs}}) {
    const FusionPlan plan = schedule::plan_fusion(workload("post_layernorm", Shape{77, 72, n}));
    Schedule walking = one_row;
    walking.persistent_finish = true;
    const KernelSource before = emit_kernel(plan, one_row, kKey), after = emit_kernel(plan, walking, kKey);
    const int registers_before = compile_kernel_source(before).kernels.at(before.finish_name).registers;
    const int registers_after = compile_kernel_source(after).kernels.at(after.finish_name).registers;
    EXPECT_EQ(ctas_an_sm(registers_after), ctas_an_sm(registers_before))
        << what << ": " << registers_before << " registers, then " << registers_after;
  }
}

TEST(KernelCompile, GlobalExchange) {
  // Row partials through global memory in groups of a cooperative launch: the suite's post-LN N = 1024
  // cluster form with four stages and only the residual staged, a cooperative group of 8 with a two-pass
  // variance, and an online softmax's partials (a running maximum and sum) in groups of 4.
  Schedule ping_pong =
      make_schedule(Knobs{.bm = 64, .bn = 256, .stages = 4, .cluster_n = 4, .roles = WarpRoles::kPingPong});
  ping_pong.persistent = ping_pong.one_pass_variance = ping_pong.carry_in_accumulator = true;
  ping_pong.interior_tiles = ping_pong.tma_inputs = ping_pong.global_exchange = ping_pong.unstaged_vectors =
      true;
  Schedule cooperative = make_schedule(Knobs{.bm = 128, .bn = 128, .stages = 3, .cluster_n = 8});
  cooperative.persistent = cooperative.global_exchange = true;
  Schedule softmax =
      make_schedule(Knobs{.bm = 128, .bn = 128, .cluster_n = 4, .carried = ValueHome::kL2Stash});
  softmax.persistent = softmax.online_softmax = softmax.global_exchange = true;
  compile_all({
      {"post_layernorm 1024 wide, cluster ping-pong, global exchange, four stages",
       workload("post_layernorm", Shape{127, 72, 1024}), std::nullopt, ping_pong},
      {"post_layernorm odd, cooperative group of 8, global exchange",
       workload("post_layernorm", Shape{127, 72, 1000}), std::nullopt, cooperative},
      {"gemm_softmax reduced, online, group of 4, global exchange", workload("gemm_softmax", kReduced),
       std::nullopt, softmax},
  });
}

TEST(KernelCompile, OperatorsWrittenInTheDsl) {
  compile_all({
      {"silu / row max |x|", test_programs::silu_row_max(96, 64, 200), std::nullopt},
      {"silu / row max |x| cluster 4 registers", test_programs::silu_row_max(96, 64, 200),
       Knobs{.bm = 128, .bn = 64, .cluster_n = 4}},
      {"row values and three outputs", test_programs::row_value_outputs(127, 72, 257), std::nullopt},
      {"five reductions in one stage, cluster 4", test_programs::five_row_reductions(256, 64, 1024),
       Knobs{.bm = 128, .bn = 128, .cluster_n = 4, .carried = ValueHome::kL2Stash}},
      {"row sums only", test_programs::row_sums(100, 64, 300), std::nullopt},
      {"causal softmax f16", test_programs::masked_softmax_f16(127, 72, 257), std::nullopt},
      {"gemm + bias + gelu_erf f16, BN 48", test_programs::gemm_bias_gelu_f16(127, 72, 257),
       Knobs{.bm = 128, .bn = 48, .stages = 6}},
  });
}

}  // namespace
}  // namespace comfuse::codegen
