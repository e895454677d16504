// The fused kernels' GPU-test cases with reductions deferred to a finish kernel: the deferred forms of the
// in-kernel cases (fused_kernel_gpu_cases.cc) and the variants of the main and finish kernels' knobs.
#include <set>
#include <string>

#include "codegen/test_programs.h"
#include "fused_kernel_gpu_cases.h"

namespace comfuse::codegen::gpu_cases {

using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;

namespace {

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

void add_deferred_variants(std::vector<Case>& result, std::size_t before) {
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
}

}  // namespace comfuse::codegen::gpu_cases
