// The fused kernels' GPU-test cases: every workload x each legal reduction placement x shapes (reduced, odd,
// suite), and each knob's variants of the cases it applies to.
#include "fused_kernel_gpu_cases.h"

#include <functional>
#include <set>
#include <string>

#include "codegen/test_programs.h"
#include "support/error.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::codegen::gpu_cases {

using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;

namespace {
// x * sigmoid(x), then each row divided by its max |x|: an operator that the op library does not have.
te::Program swish_rowmax_program(std::int64_t M, std::int64_t K, std::int64_t N) {
  using namespace te;
  auto X = placeholder({M, K}, DType::bf16, "X");
  auto W = placeholder({N, K}, DType::bf16, "W");
  auto k = reduce_axis(K, "k");
  auto Y = compute(
      {M, N}, [&](Var i, Var j) { return sum(cast(DType::f32, X(i, k)) * cast(DType::f32, W(j, k)), {k}); },
      "Y");
  auto S = compute(
      {M, N}, [&](Var i, Var j) { return Y(i, j) * sigmoid(Y(i, j)); }, "S");
  auto n = reduce_axis(N, "n");
  auto peak = compute(
      {M}, [&](Var i) { return max_reduce(abs(S(i, n)), {n}); }, "peak");
  auto out = compute(
      {M, N}, [&](Var i, Var j) { return cast(DType::bf16, S(i, j) / (peak(i) + 1e-6)); }, "out");
  return Program({X, W}, {out});
}

}  // namespace

te::Program build(const Case& c) {
  if (c.workload == "swish_rowmax")
    return swish_rowmax_program(c.shape.at("M"), c.shape.at("K"), c.shape.at("N"));
  if (c.workload == "masked_softmax_f16")
    return test_programs::masked_softmax_f16(c.shape.at("M"), c.shape.at("K"), c.shape.at("N"));
  return te::build_workload(c.workload, c.shape);
}

bool legal(const schedule::FusionPlan& plan, const Schedule& s) {
  try {
    schedule::check_legal(plan, s);
    return true;
  } catch (const CompileError&) {
    return false;
  }
}

namespace {

// Appends a copy of each of the first `count` cases whose plan and schedule `applies` holds for, with
// `turn_on` applied and `prefix` before the label (suite cases on the default schedule take it explicitly
// first).
void add_variants(std::vector<Case>& result, std::size_t count, const std::string& prefix,
                  const std::function<bool(const schedule::FusionPlan&, const Schedule&)>& applies,
                  const std::function<void(Schedule&)>& turn_on) {
  for (std::size_t i = 0; i < count; ++i) {
    Case c = result[i];
    const schedule::FusionPlan plan = schedule::plan_fusion(build(c));
    if (c.label.rfind("default", 0) == 0) c.schedule = schedule::default_schedule(plan);
    if (!applies(plan, c.schedule)) continue;
    turn_on(c.schedule);
    c.label = prefix + c.label;
    result.push_back(c);
  }
}

// The cases labelled `prefix` one pipeline stage deeper where that is legal: the stage that the shared memory
// their knob freed makes room for.
void one_stage_deeper(std::vector<Case>& result, const std::string& prefix) {
  for (Case& c : result) {
    if (c.label.rfind(prefix, 0) != 0) continue;
    Schedule deeper = c.schedule;
    ++deeper.stages;
    if (legal(schedule::plan_fusion(build(c)), deeper)) c.schedule = deeper;
  }
}

// The deferred post-norm forms with their residual staged in one slot on the persistent grid, BN = 256, at
// M = 16400, K = 1000, N = 1000 (the last row block a tail, a tail in K): post-LN and RMSNorm, alone
// (labelled one_input_slot_persistent_<alone>) and in clusters sharing B (<shared>).
void add_persistent_one_slot(std::vector<Case>& result, WarpRoles roles, int bm, int stages,
                             const std::string& alone, const std::string& shared) {
  for (const std::string w : {"post_layernorm", "post_rmsnorm"}) {
    Schedule s = test_programs::deferred_ping_pong();
    s.warp_roles = roles;
    s.bm = bm;
    s.bn = 256;
    s.stages = stages;
    s.persistent = true;
    s.bf16_stash = s.tma_inputs = s.one_input_slot = true;
    s.one_pass_variance = w == "post_layernorm";
    const te::Shape shape = {{"M", 16400}, {"K", 1000}, {"N", 1000}};
    result.push_back({w, shape, s, "one_input_slot_persistent_" + alone + "/M16400_K1000_N1000"});
    s.multicast_b = true;
    result.push_back({w, shape, s, "one_input_slot_persistent_" + shared + "/M16400_K1000_N1000"});
  }
}

}  // namespace

std::vector<Case> cases() {
  const std::vector<std::string> reducing = {"post_layernorm",      "post_rmsnorm", "gemm_layernorm_relu",
                                             "gemm_gelu_layernorm", "gemm_softmax", "gemm_softcap_softmax",
                                             "swish_rowmax"};
  const std::vector<te::Shape> shapes = {
      {{"M", 256}, {"K", 256}, {"N", 512}},  // reduced
      {{"M", 77}, {"K", 40}, {"N", 1000}},   // odd: tails in M, K and N
      {{"M", 1}, {"K", 64}, {"N", 256}},     // a single row
  };
  std::vector<Case> result;
  for (const te::Shape& shape : shapes) {
    const std::string shape_label = "M" + std::to_string(shape.at("M")) + "_K" +
                                    std::to_string(shape.at("K")) + "_N" + std::to_string(shape.at("N"));
    // Plain GEMM and GEMM+bias+ReLU: cooperative and ping-pong, several tiles.
    for (const std::string w : {"gemm", "gemm_bias_relu"}) {
      Schedule coop;
      result.push_back({w, shape, coop, "coop_128x128"});
      Schedule wide = coop;
      wide.bn = 256;
      wide.stages = 3;
      result.push_back({w, shape, wide, "coop_128x256"});
      Schedule pp = coop;
      pp.bm = 64;
      pp.warp_roles = WarpRoles::kPingPong;
      result.push_back({w, shape, pp, "pingpong_64x128"});
      if (w == "gemm_bias_relu") {
        Schedule vec = wide;
        vec.vector_loads = true;  // the bias in column pairs
        result.push_back({w, shape, vec, "coop_128x256_vector_loads"});
      }
    }
    for (const std::string& w : reducing) {
      const std::int64_t n = shape.at("N");
      Schedule cta_stash;
      cta_stash.bm = 64;
      cta_stash.carried = ValueHome::kL2Stash;
      result.push_back({w, shape, cta_stash, "cta_stash"});
      Schedule cluster_regs = cta_stash;
      cluster_regs.reduction = ReductionPlacement::kCluster;
      cluster_regs.bm = 128;
      cluster_regs.bn = 128;
      cluster_regs.cluster_n = n <= 256 ? 2 : (n <= 512 ? 4 : 8);
      cluster_regs.carried = ValueHome::kRegisters;
      result.push_back({w, shape, cluster_regs, "cluster_registers"});
      Schedule cluster_stash = cta_stash;
      cluster_stash.reduction = ReductionPlacement::kCluster;
      cluster_stash.cluster_n = 2;
      result.push_back({w, shape, cluster_stash, "cluster_stash"});
      Schedule ping_pong_stash = cta_stash;
      ping_pong_stash.warp_roles = WarpRoles::kPingPong;
      result.push_back({w, shape, ping_pong_stash, "pingpong_stash"});
      // Residuals, biases and stash re-reads loaded two columns at a time (N is even in these shapes).
      Schedule cta_stash_vec = cta_stash;
      cta_stash_vec.vector_loads = true;
      result.push_back({w, shape, cta_stash_vec, "cta_stash_vector_loads"});
      Schedule ping_pong_stash_vec = ping_pong_stash;
      ping_pong_stash_vec.vector_loads = true;
      result.push_back({w, shape, ping_pong_stash_vec, "pingpong_stash_vector_loads"});
      // Stash re-reads loaded a chunk of elements ahead (BN=128: chunks of 16; BN=80: of 8, with the inputs
      // in pairs beside them).
      Schedule batched = ping_pong_stash;
      batched.batched_reads = true;
      result.push_back({w, shape, batched, "pingpong_stash_batched_reads"});
      Schedule batched_narrow = cluster_stash;
      batched_narrow.bn = 80;
      batched_narrow.vector_loads = true;
      batched_narrow.batched_reads = true;
      result.push_back({w, shape, batched_narrow, "cluster_stash_bn80_vector_batched_reads"});
      // Deep chunks: 64-bit stash pairs at BN=128 (64 a chunk), single loads with chunks of 8 at BN=80.
      Schedule deep = batched;
      deep.deep_reads = true;
      result.push_back({w, shape, deep, "pingpong_stash_deep_reads"});
      Schedule deep_narrow = batched_narrow;
      deep_narrow.deep_reads = true;
      result.push_back({w, shape, deep_narrow, "cluster_stash_bn80_vector_deep_reads"});
      Schedule ping_pong_cluster = ping_pong_stash;
      ping_pong_cluster.reduction = ReductionPlacement::kCluster;
      ping_pong_cluster.cluster_n = n <= 512 ? 2 : 4;
      ping_pong_cluster.carried = ValueHome::kRegisters;
      result.push_back({w, shape, ping_pong_cluster, "pingpong_cluster_registers"});
      // Carried tiles in shared memory: ping-pong and cooperative, on the smallest cluster that holds them.
      for (const bool pp : {true, false}) {
        Schedule shared = cta_stash;
        shared.carried = ValueHome::kShared;
        if (pp) shared.warp_roles = WarpRoles::kPingPong;
        const Case probe{w, shape, shared, ""};
        const schedule::FusionPlan plan = schedule::plan_fusion(build(probe));
        for (int cluster = 1; cluster <= 8; cluster *= 2) {
          shared.cluster_n = cluster;
          shared.reduction = cluster > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta;
          if (!legal(plan, shared)) continue;
          const std::string label =
              std::string(pp ? "pingpong" : "cta") + "_shared_cluster" + std::to_string(cluster);
          result.push_back({w, shape, shared, label});
          shared.batched_reads = true;
          result.push_back({w, shape, shared, label + "_batched_reads"});
          shared.deep_reads = true;
          result.push_back({w, shape, shared, label + "_deep_reads"});
          break;
        }
      }
      if (n <= 256) {
        Schedule cta_regs = cta_stash;
        cta_regs.bn = 256;
        cta_regs.carried = ValueHome::kRegisters;
        result.push_back({w, shape, cta_regs, "cta_registers"});
      }
    }
    for (Case& c : result) {
      if (c.label.find("/") == std::string::npos) c.label += "/" + shape_label;
    }
  }
  // Persistent grids on shapes with more tiles than SMs (each CTA walks several, and in ping-pong its two
  // warpgroups alternate), with tails; N odd stores element by element, N even in pairs.
  for (const std::int64_t n : {2002, 999}) {
    const te::Shape shape = {{"M", 3001}, {"K", 72}, {"N", n}};
    for (const std::string w : {"gemm", "gemm_bias_relu"}) {
      Schedule coop;
      coop.bn = 256;
      coop.persistent = true;
      result.push_back({w, shape, coop, "coop_128x256_persistent/N" + std::to_string(n)});
      Schedule pp;
      pp.bm = 64;
      pp.warp_roles = WarpRoles::kPingPong;
      pp.persistent = true;
      result.push_back({w, shape, pp, "pingpong_64x128_persistent/N" + std::to_string(n)});
    }
  }
  // The TMA-store epilogue (N a multiple of 8): one-tile and persistent grids, both warp roles, tails in M
  // and in N within the last 64-column box.
  for (const te::Shape& shape :
       {te::Shape{{"M", 3001}, {"K", 72}, {"N", 2000}}, te::Shape{{"M", 77}, {"K", 40}, {"N", 1000}}}) {
    const std::string size = "M" + std::to_string(shape.at("M")) + "_N" + std::to_string(shape.at("N"));
    for (const std::string w : {"gemm", "gemm_bias_relu"}) {
      Schedule coop;
      coop.tma_store = true;
      result.push_back({w, shape, coop, "coop_128x128_tma/" + size});
      Schedule wide = coop;
      wide.bn = 256;
      wide.stages = 3;
      wide.persistent = true;
      result.push_back({w, shape, wide, "coop_128x256_persistent_tma/" + size});
      Schedule pp = coop;
      pp.bm = 64;
      pp.warp_roles = WarpRoles::kPingPong;
      pp.persistent = true;
      result.push_back({w, shape, pp, "pingpong_64x128_persistent_tma/" + size});
    }
  }
  // Suite shapes with the default schedule, checked on sampled rows.
  result.push_back({"post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}}, Schedule{}, "default/suite"});
  result.push_back({"post_rmsnorm", {{"M", 8192}, {"K", 4096}, {"N", 4096}}, Schedule{}, "default/suite"});
  result.push_back({"gemm_softmax", {{"M", 4096}, {"K", 4096}, {"N", 32000}}, Schedule{}, "default/suite"});
  result.push_back(
      {"gemm_gelu_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 4096}}, Schedule{}, "default/suite"});
  result.push_back({"gemm", {{"M", 8192}, {"K", 8192}, {"N", 8192}}, Schedule{}, "default/suite"});
  // Persistent reduction plans: clusters walk row blocks (several each: M=4500 is 71 row blocks of 64 for
  // about 16 clusters of 8, all checked), ping-pong warpgroups on alternate ones; and single CTAs walking
  // 313 row blocks (sampled: first, middle and last blocks come late in the walk).
  for (const std::string& w : reducing) {
    const te::Shape shape = {{"M", 4500}, {"K", 72}, {"N", 1000}};
    Schedule pp;
    pp.bm = 64;
    pp.warp_roles = WarpRoles::kPingPong;
    pp.cluster_n = 8;
    pp.reduction = ReductionPlacement::kCluster;
    pp.persistent = true;
    result.push_back({w, shape, pp, "persistent_pingpong_registers", 5000});
    Schedule coop = pp;
    coop.bm = 128;
    coop.warp_roles = WarpRoles::kCooperative;
    result.push_back({w, shape, coop, "persistent_coop_registers", 5000});
    Schedule stash = pp;
    stash.cluster_n = 2;
    stash.carried = ValueHome::kL2Stash;
    result.push_back({w, shape, stash, "persistent_pingpong_stash", 5000});
    Schedule shared = pp;
    shared.bn = 64;
    shared.carried = ValueHome::kShared;
    result.push_back({w, shape, shared, "persistent_pingpong_shared", 5000});
    Schedule cta = pp;
    cta.cluster_n = 1;
    cta.reduction = ReductionPlacement::kCta;
    cta.carried = ValueHome::kL2Stash;
    result.push_back({w, {{"M", 20000}, {"K", 72}, {"N", 256}}, cta, "persistent_pingpong_cta_stash/M20000"});
  }
  // Suite shapes whose carried tile fits a cluster of 8's shared memory (64 rows x 4096 columns, f32).
  Schedule shared;
  shared.bm = 64;
  shared.warp_roles = WarpRoles::kPingPong;
  shared.cluster_n = 8;
  shared.reduction = ReductionPlacement::kCluster;
  shared.carried = ValueHome::kShared;
  shared.stages = 3;
  result.push_back({"post_layernorm", {{"M", 8192}, {"K", 1024}, {"N", 4096}}, shared, "shared/suite"});
  result.push_back({"gemm_gelu_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 4096}}, shared, "shared/suite"});
  // Every case the knob applies to once more, with the knob on: the variance summed in one pass with the
  // mean, a softmax's sum kept online beside the max, the cluster exchange waited on with relaxed polls; then
  // every case with a residual (those just added included), its tiles' rows prefetched into L2 by the
  // producer.
  const std::size_t before = result.size();
  add_variants(
      result, before, "one_pass_variance_",
      [](const schedule::FusionPlan& plan, const Schedule&) {
        return schedule::one_pass_variance_applies(plan);
      },
      [](Schedule& s) { s.one_pass_variance = true; });
  add_variants(
      result, before, "online_softmax_",
      [](const schedule::FusionPlan& plan, const Schedule&) {
        return schedule::online_softmax_applies(plan);
      },
      [](Schedule& s) { s.online_softmax = true; });
  add_variants(
      result, before, "relaxed_exchange_wait_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return plan.has_reductions() && s.cluster_n > 1;
      },
      [](Schedule& s) { s.relaxed_exchange_wait = true; });
  // Wide register rows: BN=256 over a cluster of 4 fits only with the carried tile over the accumulator
  // (tails in M, K and N; persistent clusters walk several row blocks).
  for (const std::string& w : reducing) {
    Schedule wide;
    wide.bn = 256;
    wide.stages = 3;
    wide.cluster_n = 4;
    wide.reduction = ReductionPlacement::kCluster;
    wide.carry_in_accumulator = true;
    const Case probe{w, {{"M", 4500}, {"K", 72}, {"N", 1000}}, wide, ""};
    if (!legal(schedule::plan_fusion(build(probe)), wide)) continue;
    result.push_back({w, probe.shape, wide, "coop_cluster4_bn256_carry_in_accumulator/M4500_N1000", 5000});
    wide.persistent = true;
    result.push_back(
        {w, probe.shape, wide, "persistent_coop_cluster4_bn256_carry_in_accumulator/M4500_N1000", 5000});
  }
  // Every case whose one carried tile lives in registers, with it written over the accumulator.
  add_variants(
      result, result.size(), "carry_in_accumulator_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return !s.carry_in_accumulator && schedule::carry_in_accumulator_applies(plan, s);
      },
      [](Schedule& s) { s.carry_in_accumulator = true; });
  add_variants(
      result, before, "fenced_exchange_arrive_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return plan.has_reductions() && s.cluster_n > 1;
      },
      [](Schedule& s) { s.fenced_exchange_arrive = true; });
  // Every case whose warpgroups each hold one column tile of a row block, with the residual, bias and
  // gamma/beta tiles staged in shared memory by the producer (with and without the carried tile over the
  // accumulator).
  add_variants(
      result, result.size(), "tma_inputs_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return schedule::tma_inputs_apply(schedule::effective_plan(plan, s), s);
      },
      [](Schedule& s) { s.tma_inputs = true; });
  // Those whose rows combine in the kernel once more with the output written over the staged residual's slot
  // and stored from there by TMA.
  add_variants(
      result, result.size(), "tma_store_in_place_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.tma_store = true;
        return s.tma_inputs && !s.deferred() && legal(plan, t);
      },
      [](Schedule& s) { s.tma_store = true; });
  add_variants(
      result, result.size(), "prefetch_inputs_",
      [](const schedule::FusionPlan& plan, const Schedule&) { return schedule::prefetch_inputs_apply(plan); },
      [](Schedule& s) { s.prefetch_inputs = true; });
  // Every case so far whose launch has both kinds of tiles once more with the element loops twice: the tiles
  // inside the matrix run the copy without bounds tests, those at its edges the tested copy.
  add_variants(
      result, result.size(), "interior_tiles_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        const std::int64_t m = plan.anchor.m, n = plan.anchor.n;
        return m >= s.bm && n >= s.bn && (m % s.bm != 0 || n % s.bn != 0);
      },
      [](Schedule& s) { s.interior_tiles = true; });
  // The base cases with a stash (L2 or shared memory), once more with the stash in bf16; and those with a
  // variance, summed in one pass too. Plain softmax is left out: its logits here reach |x| of 10 to 40, where
  // bf16's rounding moves exp(x - max) past the tolerance (H200, 2026-12-04, the variant over every case
  // until a 200 s limit: 164 of 209 gemm_softmax kernels missed it, rel_err up to 0.147; the other workloads'
  // 612 all passed, the softcapped softmax's 119 included). The tuner rules the knob out for such a workload
  // at its first wrong answer.
  add_variants(
      result, before, "bf16_stash_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return schedule::bf16_stash_applies(schedule::effective_plan(plan, s), s);
      },
      [](Schedule& s) { s.bf16_stash = true; });
  add_variants(
      result, before, "bf16_stash_one_pass_variance_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return schedule::one_pass_variance_applies(plan) &&
               schedule::bf16_stash_applies(schedule::effective_plan(plan, s), s);
      },
      [](Schedule& s) { s.bf16_stash = s.one_pass_variance = true; });
  std::erase_if(result, [&](const Case& c) { return c.workload == "gemm_softmax" && c.schedule.bf16_stash; });
  // Every case with the online softmax once more with its update written without a branch.
  add_variants(
      result, result.size(), "branchless_",
      [](const schedule::FusionPlan&, const Schedule& s) { return s.online_softmax; },
      [](Schedule& s) { s.branchless_online_update = true; });
  // Every case of two stages so far (a softmax online, a variance in one pass, RMSNorm) once more with its
  // reduction deferred to the finish kernel: no cluster, carried tiles in the L2 stash, every tile's row
  // partials combined over the row by the second kernel.
  auto deferred = [](Schedule& s) {
    s.reduction = ReductionPlacement::kDeferred;
    s.cluster_n = 1;
    s.carried = ValueHome::kL2Stash;
    s.carry_in_accumulator = s.tma_inputs = s.relaxed_exchange_wait = s.fenced_exchange_arrive = false;
  };
  add_variants(
      result, result.size(), "deferred_",
      [&](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule d = s;
        deferred(d);
        return plan.has_reductions() && !s.deferred() && legal(plan, d);
      },
      deferred);
  // The deferred cases once more with their 16-bit inputs staged in shared memory by the producer.
  add_variants(
      result, result.size(), "tma_inputs_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return s.deferred() && schedule::tma_inputs_apply(schedule::effective_plan(plan, s), s);
      },
      [](Schedule& s) { s.tma_inputs = true; });
  // The deferred cases with a bf16 stash once more with its tile stored through shared memory by TMA.
  add_variants(
      result, result.size(), "tma_store_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.tma_store = true;
        return s.deferred() && s.bf16_stash && legal(plan, t);
      },
      [](Schedule& s) { s.tma_store = true; });
  // The deferred cases with an exp or a tanh among their elements (softmax, soft cap, gelu_tanh), where every
  // tuned winner with the knob lives, once more with them on the special-function unit. (Over every case the
  // variant would add some 1700 kernels to the run.)
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (!c.schedule.deferred() || c.schedule.tma_inputs || c.schedule.tma_store) continue;
    const schedule::FusionPlan plan = schedule::plan_fusion(build(c));
    if (!schedule::approximate_math_applies(schedule::effective_plan(plan, c.schedule))) continue;
    c.schedule.approximate_math = true;
    c.label = "approximate_math_" + c.label;
    result.push_back(c);
  }
  // The deferred cases of the odd shape once more with rows of 2600 columns (four steps of 512 and a tail of
  // 552) and four warps a row in the finish kernel: the first warp takes two steps, the tail among them.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (!c.schedule.deferred() || c.shape != te::Shape{{"M", 77}, {"K", 40}, {"N", 1000}}) continue;
    c.shape["N"] = 2600;
    c.schedule.finish_row_split = true;
    c.label = "finish_row_split_" + c.label.substr(0, c.label.find('/')) + "/M77_K40_N2600";
    if (legal(schedule::plan_fusion(build(c)), c.schedule)) result.push_back(c);
  }
  // Every case whose elements divide by a constant (the soft cap), once more with the division a
  // multiplication by the reciprocal.
  add_variants(
      result, result.size(), "reciprocal_division_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.reciprocal_division = true;
        return !s.approximate_math && !s.finish_row_split && legal(plan, t);
      },
      [](Schedule& s) { s.reciprocal_division = true; });
  // Every case whose CTAs take tiles without combining rows (plain GEMMs, deferred reductions, with the TMA
  // store and staged inputs) once more in clusters of two sharing B; the odd shape also at M = 170, where the
  // last of three row blocks of 64 is a pair's lone block that both CTAs take.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (c.schedule.approximate_math || c.schedule.finish_row_split || c.schedule.reciprocal_division)
      continue;
    const schedule::FusionPlan plan = schedule::plan_fusion(build(c));
    if (c.label.rfind("default", 0) == 0) c.schedule = schedule::default_schedule(plan);
    c.schedule.multicast_b = true;
    if (!legal(plan, c.schedule)) continue;
    c.label = "multicast_b_" + c.label;
    result.push_back(c);
    if (c.shape != te::Shape{{"M", 77}, {"K", 40}, {"N", 1000}}) continue;
    c.shape["M"] = 170;
    c.label = c.label.substr(0, c.label.find('/')) + "/M170_K40_N1000";
    result.push_back(c);
  }
  // A causal softmax in f16 (-inf above the diagonal), deferred and online; with 64-column tiles whole tiles
  // of a row lie above the diagonal.
  for (const te::Shape& shape :
       {te::Shape{{"M", 256}, {"K", 256}, {"N", 512}}, te::Shape{{"M", 77}, {"K", 40}, {"N", 1000}}}) {
    const std::string size = "M" + std::to_string(shape.at("M")) + "_N" + std::to_string(shape.at("N"));
    Schedule narrow = test_programs::deferred_ping_pong();
    narrow.bn = 64;
    narrow.online_softmax = true;
    result.push_back({"masked_softmax_f16", shape, narrow, "deferred_online_pingpong_bn64/" + size});
    Schedule wide = narrow;
    wide.bm = 128;
    wide.bn = 128;
    wide.warp_roles = WarpRoles::kCooperative;
    result.push_back({"masked_softmax_f16", shape, wide, "deferred_online_coop_128x128/" + size});
  }
  // Every case of a softmax kept online and deferred once more with its terms stashed in bf16 (the masked
  // softmax's tiles above the diagonal have a maximum of -inf).
  add_variants(
      result, result.size(), "stash_terms_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.stash_terms = true;
        return legal(plan, t);
      },
      [](Schedule& s) { s.stash_terms = true; });
  // The cases with stashed terms once more with the terms written to the staging tile and stored by TMA.
  add_variants(
      result, result.size(), "terms_tma_store_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.tma_store = true;
        return s.stash_terms && !s.tma_store && legal(plan, t);
      },
      [](Schedule& s) { s.tma_store = true; });
  // The deferred cases as first deferred (not their variants for knobs of the main kernel), the split finish
  // kernels and the stashed terms, whose rows are whole groups of eight, once more with the finish kernel's
  // wide walk (duplicates fall to the deduplication below).
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    const bool finish_case = c.label.rfind("deferred_", 0) == 0 ||
                             c.label.rfind("finish_row_split_", 0) == 0 ||
                             c.label.rfind("stash_terms_", 0) == 0;
    if (!finish_case) continue;
    c.schedule.wide_finish = true;
    // Knobs of the main kernel's loads alone (the finish kernel loads eight columns at once): one case for
    // all of them.
    c.schedule.batched_reads = c.schedule.deep_reads = c.schedule.vector_loads = false;
    c.label = "wide_finish_" + c.label;
    if (legal(schedule::plan_fusion(build(c)), c.schedule)) result.push_back(c);
  }
  // The wide finish kernels of the first-deferred cases (every deferred plan, the tails in M among them)
  // once more with the rows taken last-first.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (c.label.rfind("wide_finish_deferred_", 0) != 0) continue;
    c.schedule.reverse_finish = true;
    c.label = "reverse_finish_" + c.label;
    result.push_back(c);
    // And with the stash's stores kept in L2, where they are stored element-wise.
    c.schedule.stash_evict_last = true;
    c.label = "stash_evict_last_" + c.label;
    if (legal(schedule::plan_fusion(build(c)), c.schedule)) result.push_back(c);
  }
  // Every case with the TMA store over three boxes or more once more storing them as they fill, with the
  // pipeline stage that the staging memory freed makes room for where it does.
  add_variants(
      result, result.size(), "store_chunks_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.store_chunks = true;
        return schedule::store_chunks_applies(s) && legal(plan, t);
      },
      [](Schedule& s) { s.store_chunks = true; });
  one_stage_deeper(result, "store_chunks_");
  // The deferred cases whose first stage reads an element-wise input, once more holding it in registers from
  // before the mainloop, a stage deeper where the staged slot it leaves makes room.
  add_variants(
      result, result.size(), "register_inputs_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.register_inputs = true;
        return !s.stash_in_slot && schedule::register_inputs_apply(plan, s) && legal(plan, t);
      },
      [](Schedule& s) { s.register_inputs = true; });
  one_stage_deeper(result, "register_inputs_");
  // The deferred cases with staged inputs once more in one slot, with the pipeline stage it frees where it
  // fits.
  add_variants(
      result, result.size(), "one_input_slot_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        return s.deferred() && schedule::one_input_slot_applies(plan, s);
      },
      [](Schedule& s) { s.one_input_slot = true; });
  one_stage_deeper(result, "one_input_slot_");
  // And as the tuned post-norm rows run them: persistent ping-pong 64 x 256 with four stages, each CTA
  // walking about eight tiles whose mainloops outlast their staged epilogues, so that the producer's loads of
  // a tile land before its consumer waits for them.
  add_persistent_one_slot(result, WarpRoles::kPingPong, 64, 4, "pingpong_64x256", "multicast_b_64x256");
  // The staged-input cases (tma_inputs_, in-kernel and deferred, and the persistent one-slot forms) once more
  // reading them two columns a load, with the global pairs that needs (where it is legal: N even).
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    const bool staged =
        c.label.rfind("tma_inputs_", 0) == 0 || c.label.rfind("one_input_slot_persistent", 0) == 0;
    if (!staged) continue;
    c.schedule.vector_loads = c.schedule.staged_pairs = true;
    c.label = "staged_pairs_" + c.label;
    if (legal(schedule::plan_fusion(build(c)), c.schedule)) result.push_back(c);
  }
  // The in-kernel cases with staged inputs (rows combined in a cluster or a CTA, read one column or two a
  // load) once more with the later stages' vectors read from global memory and the residual in one slot that
  // the first stage releases, one stage deeper where the freed slot makes room.
  add_variants(
      result, result.size(), "one_input_slot_in_kernel_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.one_input_slot = t.unstaged_vectors = true;
        return s.tma_inputs && !s.deferred() && !s.one_input_slot && legal(plan, t);
      },
      [](Schedule& s) { s.one_input_slot = s.unstaged_vectors = true; });
  one_stage_deeper(result, "one_input_slot_in_kernel_");
  // And as the post-LN K = 1024 cluster form would run it: persistent ping-pong 64 x 256 in clusters of 4
  // with four stages, at M = 16400, K = 1000, N = 1000 (a tail in every dimension), reading its residual one
  // column a load and two.
  {
    Schedule s = test_programs::cluster_ping_pong_256();
    s.stages = 4;
    s.one_pass_variance = s.fenced_exchange_arrive = true;
    s.tma_inputs = s.unstaged_vectors = s.one_input_slot = true;
    const te::Shape shape = {{"M", 16400}, {"K", 1000}, {"N", 1000}};
    result.push_back({"post_layernorm", shape, s, "one_input_slot_in_kernel_persistent/M16400_K1000_N1000"});
    s.vector_loads = s.staged_pairs = s.box_reads = true;
    result.push_back(
        {"post_layernorm", shape, s, "one_input_slot_in_kernel_persistent_pairs/M16400_K1000_N1000"});
    // The same with the vectors resident in shared memory instead of read from global memory.
    s.unstaged_vectors = false;
    s.resident_vectors = true;
    result.push_back({"post_layernorm", shape, s, "resident_vectors_persistent_pairs/M16400_K1000_N1000"});
    s.vector_loads = s.staged_pairs = s.box_reads = false;
    result.push_back({"post_layernorm", shape, s, "resident_vectors_persistent/M16400_K1000_N1000"});
  }
  // The in-kernel cases with staged inputs once more with their vectors resident (one column tile a CTA),
  // in two slots, and in one with the stage it frees where it fits.
  add_variants(
      result, result.size(), "resident_vectors_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.resident_vectors = true;
        return s.tma_inputs && !s.unstaged_vectors && !s.one_input_slot && legal(plan, t);
      },
      [](Schedule& s) { s.resident_vectors = true; });
  add_variants(
      result, result.size(), "resident_vectors_one_input_slot_",
      [](const schedule::FusionPlan& plan, const Schedule& s) {
        Schedule t = s;
        t.one_input_slot = true;
        return s.resident_vectors && !s.one_input_slot && legal(plan, t);
      },
      [](Schedule& s) { s.one_input_slot = true; });
  one_stage_deeper(result, "resident_vectors_one_input_slot_");
  // And the cooperative 128 x 256 tile as the stash-in-slot form runs it: three stages, about four tiles a
  // CTA.
  add_persistent_one_slot(result, WarpRoles::kCooperative, 128, 3, "coop_128x256",
                          "coop_multicast_b_128x256");
  // The deferred cases with staged inputs (in two slots or one, read one column or two a load) once more with
  // the stash written over the staged input tile and stored by TMA from the slot, where that is legal (a bf16
  // stash, and an input tile staged).
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (!c.schedule.deferred() || !c.schedule.tma_inputs || c.schedule.tma_store) continue;
    c.schedule.bf16_stash = c.schedule.tma_store = c.schedule.stash_in_slot = true;
    c.label = "stash_in_slot_" + c.label;
    if (legal(schedule::plan_fusion(build(c)), c.schedule)) result.push_back(c);
  }
  // The wide finish kernels of the first-deferred cases (every deferred plan, tails in M, N and K), and the
  // stash-in-slot cases (their residual staged by TMA) with the wide walk, once more with streaming hints;
  // the stash-in-slot ones then with the stash's boxes stored under an evict_last policy as well.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    const bool first_deferred = c.label.rfind("wide_finish_deferred_", 0) == 0;
    if (!first_deferred && c.label.rfind("stash_in_slot_", 0) != 0) continue;
    c.schedule.wide_finish = c.schedule.streaming_hints = true;
    c.schedule.batched_reads = c.schedule.deep_reads = false;
    c.label = "streaming_hints_" + c.label;
    if (!legal(schedule::plan_fusion(build(c)), c.schedule)) continue;
    result.push_back(c);
    if (!c.schedule.stash_in_slot) continue;
    c.schedule.stash_evict_last = true;
    c.label = "stash_evict_last_" + c.label;
    result.push_back(c);
  }
  // The cases that combine rows across a cluster, on the persistent grid with the exchange through global
  // memory instead (the DSMEM exchange's own knobs off: they are the same kernel then); those with staged
  // inputs once more with the vectors out of the slot, a stage deeper where that fits.
  std::set<std::string> exchanged;
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    const schedule::FusionPlan plan = schedule::plan_fusion(build(c));
    if (c.label.rfind("default", 0) == 0) c.schedule = schedule::default_schedule(plan);
    c.schedule.persistent = c.schedule.global_exchange = true;
    c.schedule.fenced_exchange_arrive = c.schedule.relaxed_exchange_wait = false;
    c.label = "global_exchange_" + c.label;
    std::string key = c.workload + schedule::to_json(c.schedule).dump();
    for (const auto& [axis, extent] : c.shape) key += axis + std::to_string(extent);
    if (!schedule::global_exchange_applies(plan, c.schedule) || !legal(plan, c.schedule) ||
        !exchanged.insert(key).second)
      continue;
    result.push_back(c);
    if (!schedule::unstaged_vectors_apply(schedule::effective_plan(plan, c.schedule), c.schedule)) continue;
    c.schedule.unstaged_vectors = true;
    c.label = "unstaged_vectors_" + c.label;
    ++c.schedule.stages;
    if (!legal(plan, c.schedule)) --c.schedule.stages;
    result.push_back(c);
  }
  // Every case reading staged inputs in pairs once more with each box's pairs loaded ahead of its elements.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (!c.schedule.staged_pairs) continue;
    c.schedule.box_reads = true;
    c.label = "box_reads_" + c.label;
    result.push_back(c);
  }
  // The first-deferred cases, in both finish walks (tails in M, N and K), once more with the finish kernel
  // reducing its rows from the stash. (The tuned forms are checked as device_plan.sh's reduce step traces
  // them.)
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    if (c.label.rfind("deferred_", 0) != 0 && c.label.rfind("wide_finish_deferred_", 0) != 0) continue;
    c.schedule.finish_reductions = true;
    c.label = "finish_reductions_" + c.label;
    if (legal(schedule::plan_fusion(build(c)), c.schedule)) result.push_back(c);
  }
  // The first cases (before any knob's variants), and the forms the tuned winners take at the odd shape (the
  // stash by TMA, over the slot or from the staging tile, and the terms by TMA), once more with 16-bit
  // roundings by the packed conversion.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    const bool winner_form =
        (c.label.rfind("tma_store_", 0) == 0 || c.label.rfind("stash_in_slot_", 0) == 0 ||
         c.label.rfind("terms_tma_store_", 0) == 0) &&
        c.shape == te::Shape{{"M", 77}, {"K", 40}, {"N", 1000}};
    if (i >= before && !winner_form) continue;
    const schedule::FusionPlan plan = schedule::plan_fusion(build(c));
    if (c.label.rfind("default", 0) == 0) c.schedule = schedule::default_schedule(plan);
    c.schedule.packed_rounding = true;
    c.label = "packed_rounding_" + c.label;
    result.push_back(c);
    // And with shared-memory pointers the compiler knows to be shared.
    c.schedule.shared_pointers = true;
    c.label = "shared_pointers_" + c.label;
    result.push_back(c);
  }
  // Every finish kernel's form (both walks, split rows, rows last-first, the stashed terms, rows reduced from
  // the stash; tails in M, N and K) once more on a persistent grid that prefetches each warp's next row. At
  // these shapes a warp takes one row; so each form once more at M = 20000, more rows than the H200's or the
  // H100's resident warps (132 SMs x 64), where a warp walks two rows or three (ten with split rows) and
  // prefetches all but its last.
  for (std::size_t i = 0, count = result.size(); i < count; ++i) {
    Case c = result[i];
    const bool finish_form = c.label.rfind("deferred_", 0) == 0 || c.label.rfind("wide_finish_", 0) == 0 ||
                             c.label.rfind("finish_row_split_", 0) == 0 ||
                             c.label.rfind("reverse_finish_", 0) == 0 ||
                             c.label.rfind("finish_reductions_", 0) == 0;
    if (!finish_form) continue;
    c.schedule.persistent_finish = true;
    c.label = "persistent_finish_" + c.label;
    if (!legal(schedule::plan_fusion(build(c)), c.schedule)) continue;
    result.push_back(c);
    // (The masked softmax too: its reference blocks count their row index from their first row,
    // te::row_block.)
    if (c.shape.at("M") != 77 || c.shape.at("K") != 40) continue;
    c.shape["M"] = 20000;
    c.label = c.label.substr(0, c.label.find('/')) + "/M20000_K40_N" + std::to_string(c.shape.at("N"));
    result.push_back(c);
  }
  // Cases that differed only in their cluster or value home are the same kernel once deferred: keep one.
  std::set<std::string> seen;
  std::erase_if(result, [&](const Case& c) {
    if (!c.schedule.deferred()) return false;
    std::string key = c.workload + schedule::to_json(c.schedule).dump();
    for (const auto& [axis, extent] : c.shape) key += axis + std::to_string(extent);
    return !seen.insert(key).second;
  });
  return result;
}

}  // namespace comfuse::codegen::gpu_cases
