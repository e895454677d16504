// The schedule space: legal, canonical, unique; neighbourhoods one knob away.
#include "search/search_space.h"

#include <gtest/gtest.h>

#include <set>

#include "codegen/test_programs.h"
#include "support/error.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::search {
namespace {

schedule::FusionPlan plan_of(const std::string& workload, const te::Shape& shape) {
  return schedule::plan_fusion(te::build_workload(workload, shape));
}

// A softmax whose output adds its logits back: its carried tile is read after the reduction by more than the
// terms.
schedule::FusionPlan softmax_plus_logits() {
  using namespace te;
  const std::int64_t M = 256, K = 64, N = 1024;
  auto X = placeholder({M, K}, DType::bf16, "X");
  auto W = placeholder({N, K}, DType::bf16, "W");
  auto Y = matmul(X, W, BLayout::kColMajor, "Y");
  auto sm = softmax(Y, "sm");
  auto out = compute(
      {M, N}, [&](Var i, Var j) { return cast(DType::bf16, sm(i, j) + Y(i, j)); }, "out");
  return schedule::plan_fusion(Program({X, W}, {out}));
}

// Post-LN's deferred form on ping-pong 64 x 256 tiles (its K = 1024 winners' form).
schedule::Schedule test_deferred_ping_pong_256() {
  schedule::Schedule s;
  s.warp_roles = schedule::WarpRoles::kPingPong;
  s.bm = 64;
  s.bn = 256;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.one_pass_variance = true;
  return s;
}

int knobs_changed(const schedule::Schedule& a, const schedule::Schedule& b) {
  int changed = (a.bn != b.bn) + (a.stages != b.stages) + (a.cluster_n != b.cluster_n) +
                (a.carried != b.carried) + (a.raster_group_m != b.raster_group_m) +
                (a.warp_roles != b.warp_roles || a.bm != b.bm);
  for (const schedule::OptionalKnob& knob : schedule::optional_knobs())
    changed += a.*knob.field != b.*knob.field;
  return changed;
}

TEST(SearchSpace, EveryScheduleIsLegalCanonicalAndUnique) {
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}}},
           {"gemm_softmax", {{"M", 4096}, {"K", 1024}, {"N", 8192}}},
           {"gemm", {{"M", 8192}, {"K", 8192}, {"N", 8192}}},
           {"post_rmsnorm", {{"M", 77}, {"K", 40}, {"N", 1000}}}}) {
    const schedule::FusionPlan plan = plan_of(workload, shape);
    const std::vector<schedule::Schedule> space = schedule_space(plan);
    ASSERT_GT(space.size(), 10u) << workload;
    std::set<std::string> seen;
    for (const schedule::Schedule& s : space) {
      EXPECT_NO_THROW(schedule::check_legal(plan, s)) << workload << " " << schedule::to_string(s);
      EXPECT_EQ(canonical(plan, s), s) << workload;
      EXPECT_TRUE(seen.insert(schedule::to_json(s).dump()).second) << "duplicate " << schedule::to_string(s);
    }
    EXPECT_TRUE(std::is_sorted(space.begin(), space.end(), canonical_less)) << workload;
  }
}

TEST(SearchSpace, PlainGemmSearchesNoClusterAndReductionKnobs) {
  const schedule::FusionPlan plan = plan_of("gemm", {{"M", 8192}, {"K", 8192}, {"N", 8192}});
  std::set<int> rasters, widths;
  std::set<bool> grids;
  for (const schedule::Schedule& s : schedule_space(plan)) {
    grids.insert(s.persistent);
    EXPECT_EQ(s.cluster_n, 1);
    EXPECT_EQ(s.reduction, schedule::ReductionPlacement::kCta);
    EXPECT_EQ(s.carried, schedule::ValueHome::kRegisters);
    rasters.insert(s.raster_group_m);
    widths.insert(s.bn);
  }
  EXPECT_EQ(rasters, (std::set<int>{1, 8}));
  EXPECT_EQ(widths, (std::set<int>{64, 128, 192, 256}));
  EXPECT_EQ(grids, (std::set<bool>{false, true}));
}

TEST(SearchSpace, ReductionPlansSearchClustersAndHomes) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  std::set<int> clusters;
  std::set<schedule::ValueHome> homes;
  bool one_tile_per_cta_in_registers = false, persistent = false;
  for (const schedule::Schedule& s : schedule_space(plan)) {
    clusters.insert(s.cluster_n);
    homes.insert(s.carried);
    EXPECT_EQ(s.reduction == schedule::ReductionPlacement::kCluster, s.cluster_n > 1);
    persistent |= s.persistent;
    one_tile_per_cta_in_registers |=
        s.carried == schedule::ValueHome::kRegisters && s.bn * s.cluster_n == 1024;
  }
  EXPECT_EQ(clusters, (std::set<int>{1, 2, 4, 8}));
  EXPECT_EQ(homes.size(), 3u);
  EXPECT_TRUE(one_tile_per_cta_in_registers);
  EXPECT_TRUE(persistent);  // clusters walking row blocks
}

TEST(SearchSpace, CarriedTilesInSharedMemoryOnlyWhereACtaHoldsItsColumns) {
  // N=4096, one carried f32 tile: 64 rows x 4096 columns = 1 MB, in shared memory only over a cluster of 8
  // (128 KB a CTA); 64 rows at 2 or 4 CTAs, or 128 rows, leave no room for the operand ring. As bf16, 128
  // rows over 8 CTAs or 64 rows over 4 fit too (128 KB).
  const schedule::FusionPlan plan = plan_of("post_rmsnorm", {{"M", 8192}, {"K", 4096}, {"N", 4096}});
  int f32 = 0;
  std::set<std::pair<int, int>> bf16;  // (BM, cluster)
  for (const schedule::Schedule& s : schedule_space(plan)) {
    if (s.carried != schedule::ValueHome::kShared) continue;
    if (s.bf16_stash) {
      bf16.insert({s.bm, s.cluster_n});
      const int held = s.alternate_row_blocks() ? 2 : 1;  // ping-pong warpgroups each with their row block
      const int columns = (4096 / s.bn + (4096 % s.bn != 0) + s.cluster_n - 1) / s.cluster_n * s.bn;
      EXPECT_EQ(schedule::shared_stash_bytes(plan, s), s.bm * columns * 2 * held) << schedule::to_string(s);
      continue;
    }
    ++f32;
    EXPECT_EQ(s.cluster_n, 8) << schedule::to_string(s);
    EXPECT_EQ(s.bm, 64) << schedule::to_string(s);
    EXPECT_EQ(schedule::shared_stash_bytes(plan, s), 64 * 512 * 4) << schedule::to_string(s);
  }
  EXPECT_GT(f32, 0);
  EXPECT_TRUE(bf16.contains({128, 8}));
  EXPECT_TRUE(bf16.contains({64, 4}));
}

TEST(SearchSpace, DeferredReductionsWhereThePlanHasTwoStages) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 512}, {"K", 64}, {"N", 1024}});
  int deferred = 0;
  for (const schedule::Schedule& s : schedule_space(plan)) {
    if (!s.deferred()) continue;
    ++deferred;
    EXPECT_EQ(s.cluster_n, 1) << schedule::to_string(s);
    EXPECT_EQ(s.carried, schedule::ValueHome::kL2Stash) << schedule::to_string(s);
    EXPECT_TRUE(s.one_pass_variance) << schedule::to_string(s);  // else three stages
  }
  EXPECT_GT(deferred, 0);
  for (const schedule::Schedule& s : schedule_space(plan_of("gemm", {{"M", 512}, {"K", 64}, {"N", 1024}})))
    EXPECT_FALSE(s.deferred()) << schedule::to_string(s);
  // A neighbour of a schedule reducing in the kernel defers, and back.
  schedule::Schedule cta;
  cta.carried = schedule::ValueHome::kL2Stash;
  cta.one_pass_variance = true;
  const auto near = neighbours(plan, cta);
  EXPECT_TRUE(
      std::any_of(near.begin(), near.end(), [](const schedule::Schedule& n) { return n.deferred(); }));
}

TEST(SearchSpace, FinishRowSplitOnlyForDeferredRowsOfFourSteps) {
  int split = 0;
  for (const schedule::Schedule& s :
       schedule_space(plan_of("gemm_softmax", {{"M", 512}, {"K", 64}, {"N", 2048}}))) {
    if (!s.finish_row_split) continue;
    ++split;
    EXPECT_TRUE(s.deferred()) << schedule::to_string(s);
  }
  EXPECT_GT(split, 0);
  for (const schedule::Schedule& s :
       schedule_space(plan_of("gemm_softmax", {{"M", 512}, {"K", 64}, {"N", 2047}})))
    EXPECT_FALSE(s.finish_row_split) << schedule::to_string(s);
}

TEST(SearchSpace, MulticastBOnlyWhereNoClusterCombinesRows) {
  int gemm = 0;
  for (const schedule::Schedule& s : schedule_space(plan_of("gemm", {{"M", 512}, {"K", 64}, {"N", 1024}})))
    gemm += s.multicast_b ? 1 : 0;
  EXPECT_GT(gemm, 0);
  int deferred = 0;
  for (const schedule::Schedule& s :
       schedule_space(plan_of("gemm_softmax", {{"M", 512}, {"K", 64}, {"N", 2048}}))) {
    if (!s.multicast_b) continue;
    ++deferred;
    EXPECT_TRUE(s.deferred()) << schedule::to_string(s);
  }
  EXPECT_GT(deferred, 0);
}

TEST(SearchSpace, ReciprocalDivisionOnlyWhereAnElementDividesByAConstant) {
  const schedule::FusionPlan softcap = plan_of("gemm_softcap_softmax", {{"M", 256}, {"K", 64}, {"N", 1024}});
  EXPECT_TRUE(schedule::reciprocal_division_applies(softcap));  // the cap's x / 30
  schedule::Schedule s;
  s.reciprocal_division = true;
  EXPECT_TRUE(canonical(softcap, s).reciprocal_division);
  for (const std::string workload : {"gemm_softmax", "post_layernorm", "gemm_bias_relu"}) {
    const schedule::FusionPlan plan = plan_of(workload, {{"M", 256}, {"K", 64}, {"N", 1024}});
    EXPECT_FALSE(schedule::reciprocal_division_applies(plan)) << workload;
    EXPECT_FALSE(canonical(plan, s).reciprocal_division) << workload;
  }
}

TEST(SearchSpace, StashTermsOnlyForDeferredOnlineSoftmaxes) {
  int terms = 0, stored_by_tma = 0, in_chunks = 0;
  for (const schedule::Schedule& s :
       schedule_space(plan_of("gemm_softcap_softmax", {{"M", 512}, {"K", 64}, {"N", 1024}}))) {
    if (!s.stash_terms) continue;
    ++terms;
    stored_by_tma += s.tma_store;
    in_chunks += s.store_chunks;
    EXPECT_TRUE(s.deferred() && s.online_softmax && !s.bf16_stash) << schedule::to_string(s);
  }
  // Stored element-wise from the fragments, and by TMA through the whole staging tile or in chunks.
  EXPECT_GT(in_chunks, 0);
  EXPECT_GT(stored_by_tma, in_chunks);
  EXPECT_GT(terms, stored_by_tma);
  // A plan with no sum of exponentials, or one whose carried tile is read again after the reduction.
  schedule::Schedule s;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.online_softmax = s.one_pass_variance = s.stash_terms = true;
  EXPECT_FALSE(canonical(plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}}), s).stash_terms);
  const schedule::FusionPlan plus_logits = softmax_plus_logits();
  ASSERT_TRUE(schedule::online_softmax_applies(plus_logits));
  EXPECT_FALSE(canonical(plus_logits, s).stash_terms);
  s.one_pass_variance = false;
  EXPECT_TRUE(canonical(plan_of("gemm_softmax", {{"M", 256}, {"K", 64}, {"N", 1024}}), s).stash_terms);
}

TEST(SearchSpace, TheFinishKernelsKnobsOnlyForDeferredRows) {
  schedule::Schedule s;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.one_pass_variance = s.batched_reads = s.deep_reads = s.vector_loads = s.wide_finish = true;
  const schedule::Schedule wide =
      canonical(plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1000}}), s);
  EXPECT_TRUE(wide.wide_finish);
  // The finish kernel's loads are its own: batched reads would change nothing; pairs stay the main kernel's.
  EXPECT_FALSE(wide.batched_reads || wide.deep_reads);
  EXPECT_TRUE(wide.vector_loads);
  EXPECT_FALSE(canonical(plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1004}}), s).wide_finish);
  s.reduction = schedule::ReductionPlacement::kCta;
  EXPECT_FALSE(canonical(plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1000}}), s).wide_finish);
}

TEST(SearchSpace, StreamingHintsAreSearchedWithTheWideWalkAndTheRowOrderAndL2PolicyNot) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule s;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.one_pass_variance = s.wide_finish = s.reverse_finish = s.stash_evict_last = true;
  // Legal, and not searched: slower in every A/B measured (Change 52).
  ASSERT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));
  EXPECT_FALSE(canonical(ln, s).reverse_finish);
  EXPECT_FALSE(canonical(ln, s).stash_evict_last);
  // Every wide deferred schedule over a bf16 stash with the streaming hints and without, the hints only
  // there; none with the rows reversed or the stash kept.
  const std::vector<schedule::Schedule> space = schedule_space(ln, schedule::TargetLimits{});
  std::size_t wide = 0, plain = 0, hinted = 0;
  for (const schedule::Schedule& each : space) {
    wide += each.wide_finish && each.deferred();
    EXPECT_FALSE(each.reverse_finish || each.stash_evict_last);
    const bool hints_apply = each.wide_finish && each.bf16_stash;
    plain += hints_apply && !each.streaming_hints;
    hinted += each.streaming_hints;
    if (each.streaming_hints) {
      EXPECT_TRUE(hints_apply && each.deferred());
    }
  }
  EXPECT_GT(wide, 0u);
  EXPECT_GT(plain, 0u);
  EXPECT_EQ(hinted, plain);
}

TEST(SearchSpace, StreamingHintsAreSearchedWithTheWideWalkOverA16BitStash) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule s;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.one_pass_variance = s.bf16_stash = s.wide_finish = s.streaming_hints = true;
  EXPECT_TRUE(canonical(ln, s).streaming_hints);
  s.wide_finish = false;
  EXPECT_FALSE(canonical(ln, s).streaming_hints);
  s.wide_finish = true;
  s.bf16_stash = false;  // an f32 stash
  EXPECT_FALSE(canonical(ln, s).streaming_hints);
  // (The space's share: TheFinishKernelsRowOrderAndStreamingHintsAreSearchedWithTheWideWalk, one pass.)
}

TEST(SearchSpace, TheFinishKernelReducesItsRowsInTheSearchOnlyWhereItKeepsThem) {
  // Kept in registers by the wide walk (a bf16 stash, N <= 4096): searched. Loaded twice (an f32 stash,
  // elements loaded one by one, a longer row), or kept by the pairs walk (measured no faster): legal and not
  // searched (Changes 64, 66 and 67).
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  const schedule::FusionPlan longer = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 4104}});
  schedule::Schedule s;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.one_pass_variance = s.bf16_stash = s.wide_finish = s.finish_reductions = true;
  EXPECT_TRUE(canonical(ln, s).finish_reductions);
  ASSERT_NO_THROW(schedule::check_legal(longer, s, schedule::TargetLimits{}));
  EXPECT_FALSE(canonical(longer, s).finish_reductions);
  schedule::Schedule pairs = s;
  pairs.wide_finish = false;
  pairs.vector_loads = true;
  ASSERT_TRUE(schedule::finish_row_in_registers(ln, pairs));
  EXPECT_FALSE(canonical(ln, pairs).finish_reductions);
  schedule::Schedule single = pairs;
  single.vector_loads = false;
  ASSERT_NO_THROW(schedule::check_legal(ln, single, schedule::TargetLimits{}));
  EXPECT_FALSE(canonical(ln, single).finish_reductions);
  schedule::Schedule f32 = s;
  f32.bf16_stash = false;
  EXPECT_FALSE(canonical(ln, f32).finish_reductions);
  // The space holds each kept schedule with the knob and without.
  std::size_t with = 0, without = 0;
  for (const schedule::Schedule& each : schedule_space(ln, schedule::TargetLimits{})) {
    schedule::Schedule on = each;
    on.finish_reductions = true;
    if (!on.wide_finish || !schedule::finish_reductions_apply(ln, on) ||
        !schedule::finish_row_in_registers(ln, on)) {
      EXPECT_FALSE(each.finish_reductions);
      continue;
    }
    (each.finish_reductions ? with : without) += 1;
  }
  EXPECT_GT(with, 0u);
  EXPECT_EQ(with, without);
}

TEST(SearchSpace, InputsStagedByTmaAreNotAlsoPrefetched) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule s;
  s.bn = 256;
  s.warp_roles = schedule::WarpRoles::kPingPong;
  s.bm = 64;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  s.carried = schedule::ValueHome::kL2Stash;
  s.one_pass_variance = s.prefetch_inputs = true;
  EXPECT_TRUE(canonical(ln, s).prefetch_inputs);  // the residual read from global memory: prefetched
  s.tma_inputs = true;
  ASSERT_TRUE(canonical(ln, s).tma_inputs);
  EXPECT_FALSE(canonical(ln, s).prefetch_inputs);  // the residual staged by TMA: not also prefetched
  s.one_input_slot = s.tma_store = s.stash_in_slot = s.bf16_stash = true;
  EXPECT_FALSE(canonical(ln, s).prefetch_inputs);
  // Legal still: a schedule logged with both replays as it was.
  EXPECT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));
}

TEST(SearchSpace, TheExchangeThroughGlobalMemoryAndUnstagedVectorsAreLegalButNotSearched) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule s = codegen::test_programs::cluster_ping_pong_256();
  s.tma_inputs = s.global_exchange = s.unstaged_vectors = true;
  EXPECT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));  // a logged record replays
  const schedule::Schedule searched = canonical(ln, s);
  EXPECT_FALSE(searched.global_exchange);  // measured slower (Change 53)
  EXPECT_FALSE(searched.unstaged_vectors);
  EXPECT_TRUE(searched.tma_inputs);
  s.global_exchange = s.unstaged_vectors = false;
  s.fenced_exchange_arrive = true;
  EXPECT_TRUE(canonical(ln, s).fenced_exchange_arrive);  // the DSMEM exchange's knobs are searched still
}

TEST(SearchSpace, TheEarlyHandoffIsLegalButNotSearchedUntilMeasured) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  schedule::Schedule s = test_deferred_ping_pong_256();
  s.early_handoff = true;
  EXPECT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));  // a logged record replays
  EXPECT_FALSE(canonical(ln, s).early_handoff);
  const schedule::FusionPlan gemm = plan_of("gemm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  int ping_pong = 0;
  for (const schedule::Schedule& each : schedule_space(gemm)) {
    ping_pong += each.warp_roles == schedule::WarpRoles::kPingPong;
    EXPECT_FALSE(each.early_handoff);
  }
  EXPECT_GT(ping_pong, 0);
}

TEST(SearchSpace, BoxReadsAreSearchedWithEveryStagedPair) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  schedule::Schedule s = test_deferred_ping_pong_256();
  s.stages = 3;  // two slots of staged inputs leave room for three
  s.tma_inputs = s.vector_loads = s.staged_pairs = true;
  EXPECT_TRUE(canonical(ln, s).box_reads);  // measured faster in both forms (Change 54)
  s.staged_pairs = false;
  s.box_reads = true;
  EXPECT_FALSE(canonical(ln, s).box_reads);  // nothing read in pairs
  // A logged record without it replays as it was.
  s.staged_pairs = true;
  s.box_reads = false;
  EXPECT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));
}

TEST(SearchSpace, RefinementsAreOnInEveryScheduleAndLogsAreSearchedWithoutThem) {
  // packed_rounding and shared_pointers: the same bits by fewer instructions (Changes 57 and 58).
  for (const char* workload : {"gemm", "post_layernorm", "gemm_softmax"}) {
    const schedule::FusionPlan plan = plan_of(workload, {{"M", 512}, {"K", 64}, {"N", 1024}});
    const std::vector<schedule::Schedule> space = schedule_space(plan);
    ASSERT_FALSE(space.empty()) << workload;
    for (const schedule::Schedule& s : space) {
      EXPECT_TRUE(s.packed_rounding && s.shared_pointers) << workload << ": " << schedule::to_json(s).dump();
      EXPECT_FALSE(schedule::without_refinements(s).packed_rounding);
      EXPECT_FALSE(schedule::without_refinements(s).shared_pointers);
    }
  }
  const schedule::FusionPlan gemm = plan_of("gemm", {{"M", 512}, {"K", 64}, {"N", 1024}});
  schedule::Schedule logged;  // a record written before the refinements: legal, replayed as it is
  EXPECT_NO_THROW(schedule::check_legal(gemm, logged, schedule::TargetLimits{}));
  const schedule::Schedule twin = canonical(gemm, logged);
  EXPECT_TRUE(twin.packed_rounding && twin.shared_pointers);
  EXPECT_EQ(schedule::without_refinements(twin), logged);
  // An A/B about the logged schedule admits its refined twin and that twin with the knob flipped.
  const auto admit = knob_pair_filter(gemm, logged, "persistent");
  EXPECT_TRUE(admit(twin));
  schedule::Schedule persistent = twin;
  persistent.persistent = true;
  EXPECT_TRUE(admit(persistent));
  schedule::Schedule other = twin;
  other.stages = 3;
  EXPECT_FALSE(admit(other));
  // A refinement has no twin without it in the space: neither an A/B of it nor a filter fixing it off.
  for (const char* refinement : {"packed_rounding", "shared_pointers"}) {
    try {
      knob_pair_filter(gemm, logged, refinement);
      ADD_FAILURE() << "an A/B of " << refinement;
    } catch (const CompileError& error) {
      EXPECT_EQ(std::string(error.what()),
                "knob pair '" + std::string(refinement) +
                    "': a refinement, on in every schedule the search generates (the same values by other "
                    "instructions); trace a schedule with and without it instead");
    }
    EXPECT_THROW(knob_filter({std::string(refinement) + "=false"}), CompileError);
    EXPECT_TRUE(knob_filter({std::string(refinement) + "=true"})(twin));
  }
}

TEST(SearchSpace, TheStoreInChunksIsSearchedWhereItFreesMemory) {
  const schedule::FusionPlan gemm = plan_of("gemm", {{"M", 4096}, {"K", 1024}, {"N", 4096}});
  schedule::Schedule s;
  s.bn = 256;
  s.store_chunks = true;
  EXPECT_FALSE(canonical(gemm, s).store_chunks);  // no TMA store
  s.tma_store = true;
  EXPECT_TRUE(canonical(gemm, s).store_chunks);
  s.bn = 128;  // two boxes: the whole tile
  EXPECT_FALSE(canonical(gemm, s).store_chunks);
  // The space holds the 128 x 256 cooperative tile with the TMA store and four stages only in chunks.
  bool four_stages = false;
  for (const schedule::Schedule& each : schedule_space(gemm)) {
    if (!(each.tma_store && each.bm == 128 && each.bn == 256 && each.stages == 4)) continue;
    EXPECT_TRUE(each.store_chunks) << schedule::to_string(each);
    four_stages = true;
  }
  EXPECT_TRUE(four_stages);
  // With a deferred reduction, searched where the plan reads no element-wise input (RMSNorm: the stash in
  // chunks; a softmax: its terms), not with a residual (post-LN), nor with rows combined in the kernel.
  s = test_deferred_ping_pong_256();
  s.bf16_stash = s.tma_store = s.store_chunks = true;
  const te::Shape shape = {{"M", 256}, {"K", 64}, {"N", 1024}};
  EXPECT_FALSE(canonical(plan_of("post_layernorm", shape), s).store_chunks);
  s.one_pass_variance = false;
  EXPECT_TRUE(canonical(plan_of("post_rmsnorm", shape), s).store_chunks);
  schedule::Schedule in_kernel = s;
  in_kernel.reduction = schedule::ReductionPlacement::kCta;
  EXPECT_FALSE(canonical(plan_of("post_rmsnorm", shape), in_kernel).store_chunks);
  s.bf16_stash = false;
  s.online_softmax = s.stash_terms = true;
  EXPECT_TRUE(canonical(plan_of("gemm_softmax", shape), s).store_chunks);
}

TEST(SearchSpace, RowsCombinedInTheKernelStoreByTmaOnlyOverAStagedInput) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule s;
  s.bm = 64;
  s.bn = 256;
  s.warp_roles = schedule::WarpRoles::kPingPong;
  s.cluster_n = 4;
  s.reduction = schedule::ReductionPlacement::kCluster;
  s.tma_store = true;
  EXPECT_FALSE(canonical(ln, s).tma_store);
  s.tma_inputs = true;
  EXPECT_TRUE(canonical(ln, s).tma_store);
  s.carried = schedule::ValueHome::kL2Stash;  // two tiles a warpgroup: nothing staged, nothing stored over
  EXPECT_FALSE(canonical(ln, s).tma_store);
  // The space holds them: the TMA store is turned on after tma_inputs (turned on before, it folded back on
  // every such schedule, and a search fixed to them found none).
  const schedule::FusionPlan suite_ln = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  int in_place = 0, staged_in_kernel = 0;
  for (const schedule::Schedule& each : schedule_space(suite_ln)) {
    if (each.deferred() || !each.tma_inputs) continue;
    ++staged_in_kernel;
    if (each.tma_store) {
      EXPECT_TRUE(each.stores_in_place()) << schedule::to_string(each);
      ++in_place;
    }
  }
  EXPECT_GT(in_place, 0);
  EXPECT_LT(in_place, staged_in_kernel);  // each beside its twin without the store
}

TEST(SearchSpace, OneInputSlotIsSearchedWhereADeferredReductionStagesItsInputs) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  schedule::Schedule s = test_deferred_ping_pong_256();
  s.one_input_slot = true;
  EXPECT_FALSE(canonical(ln, s).one_input_slot);  // nothing staged
  s.tma_inputs = true;
  EXPECT_TRUE(canonical(ln, s).one_input_slot);
  // The space holds the deferred ping-pong 64 x 256 tile with staged inputs and four stages in one slot, or
  // in two that hold the residual alone (the bias read from global memory).
  bool four_stages = false;
  for (const schedule::Schedule& each : schedule_space(ln)) {
    if (!(each.deferred() && each.tma_inputs && each.bm == 64 && each.bn == 256 && each.stages == 4))
      continue;
    EXPECT_TRUE(each.one_input_slot) << schedule::to_string(each);
    four_stages = true;
  }
  EXPECT_TRUE(four_stages);
}

TEST(SearchSpace, OneInputSlotInTheKernelIsLegalButNotSearched) {
  // The cluster form in one slot needs the vectors unstaged, which the space leaves off: measured slower
  // (benchmarks/NOTES.md, Change 68), not searched, legal for logged schedules and A/Bs.
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  schedule::Schedule s = codegen::test_programs::cluster_ping_pong_256();
  s.stages = 4;
  s.one_pass_variance = true;
  s.tma_inputs = s.unstaged_vectors = s.one_input_slot = true;
  ASSERT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));
  const schedule::Schedule c = canonical(ln, s);
  EXPECT_FALSE(c.unstaged_vectors);
  EXPECT_FALSE(c.one_input_slot);
  // Nor with the vectors resident (Change 69, measured 17% behind the deferred form).
  s.unstaged_vectors = false;
  s.resident_vectors = true;
  ASSERT_NO_THROW(schedule::check_legal(ln, s, schedule::TargetLimits{}));
  const schedule::Schedule r = canonical(ln, s);
  EXPECT_FALSE(r.resident_vectors);
  EXPECT_FALSE(r.one_input_slot);
  for (const schedule::Schedule& each : schedule_space(ln)) {
    EXPECT_FALSE(each.one_input_slot && !each.deferred()) << schedule::to_string(each);
    EXPECT_FALSE(each.resident_vectors) << schedule::to_string(each);
  }
}

TEST(SearchSpace, StagedPairsAndTheStashInTheSlotAreSearchedWhereTheyApply) {
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  schedule::Schedule s = test_deferred_ping_pong_256();
  s.staged_pairs = s.vector_loads = true;
  EXPECT_FALSE(canonical(ln, s).staged_pairs);  // nothing staged
  s.tma_inputs = true;
  EXPECT_TRUE(canonical(ln, s).staged_pairs);
  s.vector_loads = false;
  EXPECT_FALSE(canonical(ln, s).staged_pairs);  // global reads one by one, staged ones too
  s = test_deferred_ping_pong_256();
  s.bf16_stash = s.stash_in_slot = true;
  s.tma_inputs = true;
  EXPECT_FALSE(canonical(ln, s).stash_in_slot);  // the stash leaves by plain stores
  s.tma_store = true;
  EXPECT_TRUE(canonical(ln, s).stash_in_slot);
  s.tma_inputs = false;
  EXPECT_FALSE(canonical(ln, s).stash_in_slot);  // no slot to write over
  // In the space (one pass over it: it takes seconds to build):
  // - every staged schedule that reads in pairs, both ways, and no other with staged_pairs;
  // - every deferred schedule storing its stash by TMA from staged inputs, both ways (memory permitting:
  //   without staging tiles of its own there are more of them with the knob), and no other with
  //   stash_in_slot.
  int pairs_with = 0, pairs_without = 0, slot_with = 0, slot_without = 0, cooperative_with = 0;
  for (const schedule::Schedule& each : schedule_space(ln)) {
    if (each.tma_inputs && each.vector_loads)
      ++(each.staged_pairs ? pairs_with : pairs_without);
    else
      EXPECT_FALSE(each.staged_pairs) << schedule::to_string(each);
    if (each.deferred() && each.tma_store && each.tma_inputs) {
      ++(each.stash_in_slot ? slot_with : slot_without);
      cooperative_with += each.stash_in_slot && each.warp_roles == schedule::WarpRoles::kCooperative;
    } else {
      EXPECT_FALSE(each.stash_in_slot) << schedule::to_string(each);
    }
  }
  EXPECT_GT(pairs_with, 0);
  EXPECT_EQ(pairs_with, pairs_without);
  EXPECT_GE(slot_with, slot_without);
  EXPECT_GT(cooperative_with, 0);
}

TEST(SearchSpace, KnobPairFilterAdmitsABaseAndItWithTheOneKnobFlipped) {
  const schedule::FusionPlan gemm = plan_of("gemm", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule base;
  base.bn = 256;
  base.persistent = true;
  const auto admit = knob_pair_filter(gemm, base, "multicast_b");
  EXPECT_TRUE(admit(base));
  schedule::Schedule flipped = base;
  flipped.multicast_b = true;
  EXPECT_TRUE(admit(flipped));
  schedule::Schedule other = base;
  other.persistent = false;  // another knob moved
  EXPECT_FALSE(admit(other));
  flipped.bn = 128;
  EXPECT_FALSE(admit(flipped));
  // A knob that excludes another: the terms' stash against a bf16 stash of x, bf16_stash turned off.
  const schedule::FusionPlan softcap = plan_of("gemm_softcap_softmax", {{"M", 256}, {"K", 64}, {"N", 1024}});
  schedule::Schedule stash;
  stash.reduction = schedule::ReductionPlacement::kDeferred;
  stash.carried = schedule::ValueHome::kL2Stash;
  stash.online_softmax = stash.bf16_stash = true;
  schedule::Schedule terms = stash;
  terms.bf16_stash = false;
  terms.stash_terms = true;
  EXPECT_TRUE(knob_pair_filter(softcap, stash, "stash_terms")(terms));
  try {
    knob_pair_filter(gemm, base, "bn");
    ADD_FAILURE() << "a base field passed as an optional knob";
  } catch (const CompileError& error) {
    EXPECT_EQ(std::string(error.what())
                  .rfind("knob pair 'bn': not an optional knob (optional knobs: persistent, tma_store, ", 0),
              0u)
        << error.what();
  }
}

TEST(SearchSpace, ApproximateMathAppliesAlikeToAPlanAndItsMergedForms) {
  // canonical tests approximate_math on the plan as planned, legality on the plan a schedule runs: the merges
  // move tiles between stages but neither adds nor drops one, so the two answers agree.
  for (const std::string workload :
       {"post_layernorm", "post_rmsnorm", "gemm_layernorm_relu", "gemm_gelu_layernorm", "gemm_softmax",
        "gemm_softcap_softmax", "gemm_bias_relu"}) {
    const schedule::FusionPlan plan = plan_of(workload, {{"M", 256}, {"K", 64}, {"N", 1024}});
    for (const bool one_pass : {false, true}) {
      for (const bool online : {false, true}) {
        schedule::Schedule s;
        s.one_pass_variance = one_pass && schedule::one_pass_variance_applies(plan);
        s.online_softmax = online && schedule::online_softmax_applies(plan);
        EXPECT_EQ(schedule::approximate_math_applies(plan),
                  schedule::approximate_math_applies(schedule::effective_plan(plan, s)))
            << workload << " " << schedule::to_string(s);
      }
    }
  }
  EXPECT_TRUE(
      schedule::approximate_math_applies(plan_of("gemm_softmax", {{"M", 256}, {"K", 64}, {"N", 1024}})));
  EXPECT_FALSE(
      schedule::approximate_math_applies(plan_of("post_rmsnorm", {{"M", 256}, {"K", 64}, {"N", 1024}})));
}

TEST(SearchSpace, CanonicalDropsKnobsThePlanIgnores) {
  const schedule::FusionPlan gemm = plan_of("gemm", {{"M", 256}, {"K", 64}, {"N", 256}});
  schedule::Schedule s;
  s.cluster_n = 4;
  s.reduction = schedule::ReductionPlacement::kCluster;
  s.carried = schedule::ValueHome::kL2Stash;
  const schedule::Schedule c = canonical(gemm, s);
  EXPECT_EQ(c.cluster_n, 1);
  EXPECT_EQ(c.reduction, schedule::ReductionPlacement::kCta);
  EXPECT_EQ(c.carried, schedule::ValueHome::kRegisters);
  // Nothing to load in pairs: a plain GEMM has no epilogue inputs and no stash.
  s.vector_loads = true;
  EXPECT_FALSE(canonical(gemm, s).vector_loads);
  const schedule::FusionPlan ln = plan_of("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 256}});
  EXPECT_TRUE(canonical(ln, s).vector_loads);  // the residual and the bias
}

TEST(SearchSpace, NeighboursAreOneKnobAwayAndLegal) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  const schedule::Schedule start = canonical(plan, schedule::default_schedule(plan));
  const std::vector<schedule::Schedule> near = neighbours(plan, start);
  ASSERT_FALSE(near.empty());
  for (const schedule::Schedule& n : near) {
    EXPECT_NE(n, start);
    const bool chunks_and_stage = n.store_chunks && !start.store_chunks && n.stages == start.stages + 1;
    EXPECT_EQ(knobs_changed(start, n), chunks_and_stage ? 2 : 1) << schedule::to_string(n);
    EXPECT_NO_THROW(schedule::check_legal(plan, n));
  }
}

// A softmax's terms through the whole staging tile of a cooperative 128 x 256 with three stages, as its
// winners run: a fourth stage alone does not fit beside the tile; with the terms in chunks it does.
schedule::Schedule softmax_terms_winner(const schedule::FusionPlan& plan) {
  schedule::Schedule start = test_deferred_ping_pong_256();
  start.warp_roles = schedule::WarpRoles::kCooperative;
  start.bm = 128;
  start.stages = 3;
  start.one_pass_variance = false;
  start.online_softmax = start.stash_terms = start.tma_store = start.persistent = true;
  return canonical(plan, start);
}

TEST(SearchSpace, TheStoreInChunksNeighboursWithTheStageItFrees) {
  const schedule::FusionPlan plan = plan_of("gemm_softmax", {{"M", 4096}, {"K", 1024}, {"N", 8192}});
  const schedule::Schedule start = softmax_terms_winner(plan);
  ASSERT_NO_THROW(schedule::check_legal(plan, start));
  schedule::Schedule deeper = start;
  deeper.stages = 4;
  EXPECT_THROW(schedule::check_legal(plan, deeper), CompileError);
  const std::vector<schedule::Schedule> near = neighbours(plan, start);
  EXPECT_TRUE(std::any_of(near.begin(), near.end(), [&](const schedule::Schedule& n) {
    return n.store_chunks && n.stages == 4 && knobs_changed(start, n) == 2;
  }));
  EXPECT_FALSE(std::any_of(near.begin(), near.end(),
                           [&](const schedule::Schedule& n) { return !n.store_chunks && n.stages == 4; }));
}

TEST(SearchSpace, AnABOfTheStoreInChunksAlsoTriesTheStageItFrees) {
  const schedule::FusionPlan plan = plan_of("gemm_softmax", {{"M", 4096}, {"K", 1024}, {"N", 8192}});
  const schedule::Schedule base = softmax_terms_winner(plan);
  const auto admit = knob_pair_filter(plan, base, "store_chunks");
  schedule::Schedule chunks = base;
  chunks.store_chunks = true;
  schedule::Schedule deeper = chunks;
  deeper.stages = 4;
  EXPECT_TRUE(admit(base));
  EXPECT_TRUE(admit(canonical(plan, chunks)));
  EXPECT_TRUE(admit(canonical(plan, deeper)));
  EXPECT_TRUE(canonical(plan, deeper).store_chunks);  // kept by the space: it reads no element-wise input
  EXPECT_NO_THROW(schedule::check_legal(plan, canonical(plan, deeper)));
  schedule::Schedule whole_deeper = base;  // the stage without the chunks that free it
  whole_deeper.stages = 4;
  EXPECT_FALSE(admit(whole_deeper));
  deeper.stages = 5;
  EXPECT_FALSE(admit(deeper));
  // Turned off, the knob frees nothing: an A/B about a chunked base admits the two schedules alone.
  const schedule::Schedule chunked = canonical(plan, chunks);
  const auto admit_off = knob_pair_filter(plan, chunked, "store_chunks");
  EXPECT_TRUE(admit_off(chunked));
  EXPECT_TRUE(admit_off(base));
  EXPECT_FALSE(admit_off(canonical(plan, whole_deeper)));
}

TEST(SearchSpace, KnobFilterAdmitsTheSchedulesWithTheGivenValues) {
  const schedule::FusionPlan plan = plan_of("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  const auto admit = knob_filter({"persistent=true", "carried=registers", "cluster_n=8"});
  int admitted = 0;
  for (const schedule::Schedule& s : schedule_space(plan)) {
    const bool expected = s.persistent && s.carried == schedule::ValueHome::kRegisters && s.cluster_n == 8;
    EXPECT_EQ(admit(s), expected) << schedule::to_string(s);
    admitted += expected ? 1 : 0;
  }
  EXPECT_GT(admitted, 0);
  // Optional booleans absent from the JSON read as false.
  EXPECT_TRUE(knob_filter({"tma_store=false"})(schedule::Schedule{}));
  EXPECT_TRUE(knob_filter({})(schedule::Schedule{}));
}

TEST(SearchSpace, KnobFilterRejectsUnknownKnobsAndValuesOfTheWrongType) {
  auto error_of = [](const std::vector<std::string>& fixes) {
    try {
      knob_filter(fixes);
    } catch (const CompileError& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of({"split_k=2"}).substr(0, 46), "knob filter 'split_k=2': no knob 'split_k' (kn");
  EXPECT_EQ(error_of({"persistent"}), "knob filter 'persistent': expected knob=value");
  EXPECT_EQ(error_of({"bn=wide"}), "knob filter 'bn=wide': bn takes an integer");
  EXPECT_EQ(error_of({"persistent=yes"}), "knob filter 'persistent=yes': persistent takes boolean");
}

}  // namespace
}  // namespace comfuse::search
