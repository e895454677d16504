// Illegal schedules and malformed schedule JSON: each CompileError message asserted.
#include <gtest/gtest.h>

#include <functional>

#include "schedule/legality_error.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

using legality_error_test::defer_layer_norm;
using legality_error_test::error_of;
using legality_error_test::legality_error;
using legality_error_test::plan_of;

struct Plans {
  FusionPlan gemm = plan_of("gemm", 256, 128, 512);
  FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
};

TEST(ScheduleErrors, TmaStoreEpilogue) {
  const Plans p;
  EXPECT_EQ(legality_error(p.gemm,
                           [](Schedule& s) {
                             s.tma_store = true;
                             s.bn = 96;
                           }),
            "schedule for 'mm': tma_store=true with BN=96: the output tile leaves in boxes of 64 columns");
  EXPECT_EQ(legality_error(plan_of("gemm", 256, 128, 500), [](Schedule& s) { s.tma_store = true; }),
            "schedule for 'mm': tma_store=true with N=500: output rows must be 16-byte aligned for TMA (N a "
            "multiple of 8)");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.tma_store = true; }), "(no error)");
  // The store in chunks: of the TMA store's boxes, three or more of them.
  EXPECT_EQ(
      legality_error(p.gemm,
                     [](Schedule& s) {
                       s.store_chunks = true;
                       s.bn = 256;
                       s.stages = 2;
                     }),
      "schedule for 'mm': store_chunks=true needs tma_store=true, BN of three 64-column boxes or more (with "
      "two boxes the whole tile is two boxes already) and the output not stored over a staged input "
      "(tma_store=false, BN=256, stored in place=false)");
  EXPECT_EQ(
      legality_error(p.gemm, [](Schedule& s) { s.tma_store = s.store_chunks = true; }),
      "schedule for 'mm': store_chunks=true needs tma_store=true, BN of three 64-column boxes or more (with "
      "two boxes the whole tile is two boxes already) and the output not stored over a staged input "
      "(tma_store=true, BN=128, stored in place=false)");
  // A 128 x 256 tile with four stages: too much shared memory with the whole tile staged, room in chunks.
  const auto wide = [](Schedule& s) {
    s.tma_store = true;
    s.bn = 256;
    s.stages = 4;
  };
  EXPECT_NE(legality_error(p.gemm, wide).find("bytes of shared memory"), std::string::npos)
      << legality_error(p.gemm, wide);
  EXPECT_EQ(legality_error(p.gemm,
                           [&](Schedule& s) {
                             wide(s);
                             s.store_chunks = true;
                           }),
            "(no error)");
  EXPECT_EQ(
      legality_error(plan_of("post_layernorm", 64, 64, 257), [](Schedule& s) { s.vector_loads = true; }),
      "schedule for 'mm': vector_loads=true with N=257: a thread's two neighbouring columns are loaded as "
      "one, so N must be even");
}

TEST(ScheduleErrors, TileShape) {
  const Plans p;
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.bk = 32; }),
            "schedule for 'mm': BK=32 is not 64 (one 128-byte swizzle row of bf16)");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.bn = 200; }),
            "schedule for 'mm': BN=200 is not a multiple of 16 in [16, 256]");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.bn = 272; }),
            "schedule for 'mm': BN=272 is not a multiple of 16 in [16, 256]");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.bn = 0; }),
            "schedule for 'mm': BN=0 is not a multiple of 16 in [16, 256]");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.bm = 192; }),
            "schedule for 'mm': BM=192 is neither 64 nor 128 (64 rows per consumer warpgroup)");
  EXPECT_EQ(
      legality_error(p.gemm,
                     [](Schedule& s) {
                       s.bm = 128;
                       s.warp_roles = WarpRoles::kPingPong;
                     }),
      "schedule for 'mm': BM=128 with ping-pong warp roles: each warpgroup owns the same 64 rows, so BM=64");
}

TEST(ScheduleErrors, PipelineAndCluster) {
  const Plans p;
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.stages = 1; }),
            "schedule for 'mm': stages=1 is outside [2, 8]");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.stages = 9; }),
            "schedule for 'mm': stages=9 is outside [2, 8]");
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.cluster_n = 3;
                             s.reduction = ReductionPlacement::kCluster;
                           }),
            "schedule for 'mm': cluster_n=3 is not 1, 2, 4 or 8");
  EXPECT_EQ(legality_error(p.ln, [](Schedule& s) { s.cluster_n = 16; }),
            "schedule for 'mm': cluster_n=16 is not 1, 2, 4 or 8");
  TargetLimits small_clusters;
  small_clusters.max_cluster_size = 2;
  EXPECT_EQ(legality_error(
                p.ln,
                [](Schedule& s) {
                  s.cluster_n = 4;
                  s.reduction = ReductionPlacement::kCluster;
                },
                small_clusters),
            "schedule for 'mm': cluster_n=4 exceeds the target's cluster limit 2");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.raster_group_m = 0; }),
            "schedule for 'mm': raster_group_m=0 is outside [1, 64]");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.raster_group_m = 65; }),
            "schedule for 'mm': raster_group_m=65 is outside [1, 64]");
}

TEST(ScheduleErrors, Operands) {
  const FusionPlan k40 = plan_of("gemm", 64, 44, 64);
  EXPECT_EQ(
      legality_error(k40, [](Schedule&) {}),
      "schedule for 'mm': K=44 is not a multiple of 8: the operand rows must be 16-byte aligned for TMA");
  const te::Tensor X = te::placeholder({64, 32}, te::DType::bf16, "X");
  const te::Tensor B = te::placeholder({32, 48}, te::DType::bf16, "B");
  const FusionPlan row_major =
      plan_fusion(te::Program({X, B}, {te::matmul(X, B, te::BLayout::kRowMajor, "C")}));
  EXPECT_EQ(legality_error(row_major, [](Schedule&) {}),
            "schedule for 'C': operand 'B' is [K, N]: this code generator takes B as [N, K]");
}

TEST(ScheduleErrors, ReductionPlacement) {
  const Plans p;
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.reduction = ReductionPlacement::kCluster;
                             s.carried = ValueHome::kL2Stash;
                           }),
            "schedule for 'mm': cluster reduction placement with cluster_n=1: use placement 'cta' or a "
            "cluster of 2 "
            "or more");
  EXPECT_EQ(
      legality_error(p.ln, [](Schedule& s) { s.cluster_n = 2; }),
      "schedule for 'mm': CTA reduction placement with cluster_n=2: clusters split rows' columns only with "
      "placement 'cluster'");
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.bn = 256;
                             s.cluster_n = 4;
                             s.reduction = ReductionPlacement::kCluster;
                           }),
            "schedule for 'mm': cluster_n=4 exceeds the 2 column tiles of N=512 at BN=256");
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.bm = 64;
                             s.warp_roles = WarpRoles::kPingPong;
                             s.carried = ValueHome::kL2Stash;
                           }),
            "(no error)");  // ping-pong warpgroups combine their row partials through shared memory
  EXPECT_EQ(legality_error(p.ln, [](Schedule& s) { s.tma_store = true; }),
            "schedule for 'mm': tma_store=true with row reductions combined in the kernel writes the last "
            "stage's output over the staged slot of a 16-bit input tile that only the first stage reads: it "
            "needs tma_inputs=true and such an input (tma_inputs=false)");
  // With the residual staged (a cluster of four holding a row of 512 in registers), the output goes over it.
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.cluster_n = 4;
                             s.reduction = schedule::ReductionPlacement::kCluster;
                             s.tma_inputs = s.tma_store = true;
                           }),
            "(no error)");
  // Not in chunks: it has no boxes of its own.
  EXPECT_NE(legality_error(p.ln,
                           [](Schedule& s) {
                             s.cluster_n = 2;
                             s.bn = 256;
                             s.stages = 2;
                             s.reduction = schedule::ReductionPlacement::kCluster;
                             s.tma_inputs = s.tma_store = s.store_chunks = true;
                           })
                .find("store_chunks=true needs"),
            std::string::npos);
  // Persistent ping-pong warpgroups take alternate row blocks: each holds all of the CTA's column tiles.
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.bm = 64;
                             s.bn = 128;
                             s.cluster_n = 2;
                             s.reduction = ReductionPlacement::kCluster;
                             s.warp_roles = WarpRoles::kPingPong;
                             s.persistent = true;
                           }),
            "schedule for 'mm': carried tiles in registers need one column tile per consumer warpgroup, but "
            "N=512 at BN=128 and cluster_n=2 gives 2: use carried=l2_stash");
}

TEST(ScheduleErrors, DeferredReduction) {
  const Plans p;
  const auto deferred = defer_layer_norm;
  EXPECT_EQ(legality_error(p.ln, deferred), "(no error)");
  EXPECT_EQ(legality_error(p.ln,
                           [&](Schedule& s) {
                             deferred(s);
                             s.one_pass_variance = false;
                           }),
            "schedule for 'mm': deferred reduction placement with 3 stages: the finish kernel runs the one "
            "stage after a single reduction barrier");
  EXPECT_EQ(legality_error(p.ln,
                           [&](Schedule& s) {
                             deferred(s);
                             s.cluster_n = 2;
                           }),
            "schedule for 'mm': deferred reduction placement with cluster_n=2: each CTA writes its own "
            "tile's row partials, no cluster exchanges them");
  EXPECT_EQ(legality_error(p.ln,
                           [&](Schedule& s) {
                             deferred(s);
                             s.carried = ValueHome::kShared;
                           }),
            "schedule for 'mm': deferred reduction placement with carried=shared: the finish kernel re-reads "
            "carried tiles from the L2 stash");
  EXPECT_EQ(legality_error(p.ln,
                           [&](Schedule& s) {
                             deferred(s);
                             s.tma_store = true;
                           }),
            "schedule for 'mm': tma_store=true with a deferred reduction needs a bf16 stash (bf16_stash=true "
            "or stash_terms=true) and one carried tile (1 carried, bf16_stash=false, stash_terms=false)");
  EXPECT_EQ(legality_error(p.ln,
                           [&](Schedule& s) {
                             deferred(s);
                             s.tma_store = s.bf16_stash = true;
                           }),
            "(no error)");
  EXPECT_EQ(legality_error(p.gemm, [](Schedule& s) { s.reduction = ReductionPlacement::kDeferred; }),
            "schedule for 'mm': deferred reduction placement without row reductions: there is nothing to "
            "finish");
}

TEST(ScheduleErrors, ApproximateMath) {
  const Plans p;
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.carried = ValueHome::kL2Stash;
                             s.approximate_math = true;
                           }),
            "schedule for 'mm': approximate_math=true but no element expression of the epilogue takes exp or "
            "tanh");
  Schedule s;
  s.carried = ValueHome::kL2Stash;
  s.approximate_math = true;
  EXPECT_NO_THROW(schedule::check_legal(plan_of("gemm_softmax", 256, 128, 512), s));
}

TEST(ScheduleErrors, FinishRowSplit) {
  const Plans p;  // N = 512: a quarter of the 2048 columns four warps a row need
  const auto deferred = defer_layer_norm;
  EXPECT_EQ(legality_error(p.ln,
                           [&](Schedule& s) {
                             deferred(s);
                             s.finish_row_split = true;
                           }),
            "schedule for 'mm': finish_row_split=true needs a deferred reduction over rows of at least 2048 "
            "columns (4 warps a row, 512 columns a step), but reduction=deferred and N=512");
  const FusionPlan wide = plan_of("post_layernorm", 256, 64, 2048);
  Schedule split;
  deferred(split);
  split.finish_row_split = true;
  EXPECT_NO_THROW(schedule::check_legal(wide, split));
  split.reduction = ReductionPlacement::kCta;
  try {
    schedule::check_legal(wide, split);
    ADD_FAILURE() << "a finish kernel's split without a finish kernel passed";
  } catch (const CompileError& error) {
    EXPECT_NE(std::string(error.what()).find("but reduction=cta and N=2048"), std::string::npos)
        << error.what();
  }
}

TEST(ScheduleErrors, MulticastB) {
  const Plans p;
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.carried = ValueHome::kL2Stash;
                             s.multicast_b = true;
                           }),
            "schedule for 'mm': multicast_b=true needs CTAs that take tiles without combining rows across a "
            "cluster (no row reductions, or placement 'deferred'), but reduction=cta and cluster_n=1");
  Schedule s;
  s.multicast_b = true;
  EXPECT_NO_THROW(schedule::check_legal(p.gemm, s));
  defer_layer_norm(s);
  EXPECT_NO_THROW(schedule::check_legal(p.ln, s));
  TargetLimits no_clusters;
  no_clusters.max_cluster_size = 1;
  EXPECT_EQ(legality_error(
                p.gemm, [](Schedule& s) { s.multicast_b = true; }, no_clusters),
            "schedule for 'mm': multicast_b=true needs clusters of 2, but the target's cluster limit is 1");
}

TEST(ScheduleErrors, ReciprocalDivision) {
  const Plans p;
  EXPECT_EQ(
      legality_error(p.gemm, [](Schedule& s) { s.reciprocal_division = true; }),
      "schedule for 'mm': reciprocal_division=true but no element expression of the epilogue divides by a "
      "constant");
  Schedule s;
  s.carried = ValueHome::kL2Stash;
  s.reciprocal_division = true;
  EXPECT_NO_THROW(schedule::check_legal(plan_of("gemm_softcap_softmax", 256, 128, 512), s));
}

TEST(ScheduleErrors, StashTerms) {
  const FusionPlan softmax = plan_of("gemm_softmax", 256, 128, 512);
  auto deferred_online = [](Schedule& s) {
    s.reduction = ReductionPlacement::kDeferred;
    s.carried = ValueHome::kL2Stash;
    s.online_softmax = s.stash_terms = true;
  };
  EXPECT_EQ(legality_error(softmax, deferred_online), "(no error)");
  EXPECT_EQ(legality_error(softmax,
                           [&](Schedule& s) {
                             deferred_online(s);
                             s.online_softmax = false;
                             s.reduction = ReductionPlacement::kCta;  // three stages do not defer
                           }),
            "schedule for 'mm': stash_terms=true needs online_softmax=true on a softmax whose x is the one "
            "carried tile, read after the reduction only by the terms exp(x - max) (online_softmax=false, 2 "
            "carried tile(s))");
  // A layer norm has no sum of exponentials, online or not.
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                           [&](Schedule& s) {
                             deferred_online(s);
                             s.online_softmax = false;
                             s.one_pass_variance = true;
                           }),
            "schedule for 'mm': stash_terms=true needs online_softmax=true on a softmax whose x is the one "
            "carried tile, read after the reduction only by the terms exp(x - max) (online_softmax=false, 1 "
            "carried tile(s))");
  EXPECT_EQ(legality_error(softmax,
                           [&](Schedule& s) {
                             deferred_online(s);
                             s.reduction = ReductionPlacement::kCta;
                           }),
            "schedule for 'mm': stash_terms=true needs reduction=deferred (the finish kernel rescales the "
            "terms), but reduction=cta");
  EXPECT_EQ(
      legality_error(softmax,
                     [&](Schedule& s) {
                       deferred_online(s);
                       s.bf16_stash = true;
                     }),
      "schedule for 'mm': stash_terms=true with bf16_stash=true: the terms' stash is bf16 already; leave "
      "bf16_stash off");
  // The terms through the staging tile by TMA: the whole tile at once, after the element loop.
  EXPECT_EQ(legality_error(softmax,
                           [&](Schedule& s) {
                             deferred_online(s);
                             s.tma_store = true;
                           }),
            "(no error)");
  // Or a box at a time, through two boxes: room for a fourth stage of 128 x 256 that the whole tile takes.
  const auto four_stages = [&](Schedule& s) {
    deferred_online(s);
    s.tma_store = true;
    s.warp_roles = WarpRoles::kCooperative;
    s.bm = 128;
    s.bn = 256;
    s.stages = 4;
  };
  EXPECT_NE(legality_error(softmax, four_stages).find("bytes of shared memory"), std::string::npos)
      << legality_error(softmax, four_stages);
  EXPECT_EQ(legality_error(softmax,
                           [&](Schedule& s) {
                             four_stages(s);
                             s.store_chunks = true;
                           }),
            "(no error)");
  EXPECT_EQ(
      legality_error(plan_of("gemm_softmax", 256, 128, 64 * 1025),
                     [&](Schedule& s) {
                       deferred_online(s);
                       s.bn = 64;
                     }),
      "schedule for 'mm': stash_terms=true with 1025 column tiles (N=65600, BN=64): the finish kernel's "
      "table of their factors holds at most 1024");
}

TEST(ScheduleErrors, WideFinish) {
  auto deferred = [](Schedule& s) {
    defer_layer_norm(s);
    s.wide_finish = true;
  };
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512), deferred), "(no error)");
  EXPECT_EQ(
      legality_error(plan_of("post_layernorm", 256, 128, 1004), deferred),
      "schedule for 'mm': wide_finish=true needs reduction=deferred, N a multiple of 8 and 16-bit or f32 "
      "tiles and inputs along the rows (reduction=deferred, N=1004)");
  EXPECT_EQ(
      legality_error(plan_of("post_layernorm", 256, 128, 512),
                     [&](Schedule& s) {
                       deferred(s);
                       s.reduction = ReductionPlacement::kCta;
                     }),
      "schedule for 'mm': wide_finish=true needs reduction=deferred, N a multiple of 8 and 16-bit or f32 "
      "tiles and inputs along the rows (reduction=cta, N=512)");
}

TEST(ScheduleErrors, FinishKernelKnobsNeedADeferredReduction) {
  // Knobs of the finish kernel alone: legal with a deferred reduction, refused, named, without one.
  const std::pair<bool Schedule::*, std::string> knobs[] = {
      {&Schedule::reverse_finish, "reverse_finish=true orders a finish kernel's rows"},
      {&Schedule::persistent_finish, "persistent_finish=true runs a finish kernel's CTAs over its rows"},
  };
  for (const auto& [knob, what] : knobs) {
    auto deferred = [knob = knob](Schedule& s) {
      defer_layer_norm(s);
      s.*knob = true;
    };
    EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512), deferred), "(no error)") << what;
    EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                             [&](Schedule& s) {
                               deferred(s);
                               s.reduction = ReductionPlacement::kCta;
                             }),
              "schedule for 'mm': " + what + ", which only reduction=deferred has (reduction=cta)");
  }
}

TEST(ScheduleErrors, EarlyHandoffNeedsPingPongWarpgroups) {
  const FusionPlan gemm = plan_of("gemm", 256, 128, 512);
  const auto early = [](WarpRoles roles, int bm) {
    return [roles, bm](Schedule& s) {
      s.warp_roles = roles;
      s.bm = bm;
      s.early_handoff = true;
    };
  };
  EXPECT_EQ(legality_error(gemm, early(WarpRoles::kPingPong, 64)), "(no error)");
  EXPECT_EQ(
      legality_error(gemm, early(WarpRoles::kCooperative, 128)),
      "schedule for 'mm': early_handoff=true hands the mainloop from one ping-pong warpgroup to the other, "
      "which only warp_roles=ping_pong has (warp_roles=cooperative)");
}

TEST(ScheduleErrors, StreamingHints) {
  auto hinted = [](Schedule& s) {
    defer_layer_norm(s);
    s.bf16_stash = s.wide_finish = s.streaming_hints = true;
  };
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  EXPECT_EQ(legality_error(ln, hinted), "(no error)");
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             hinted(s);
                             s.wide_finish = false;
                           }),
            "schedule for 'mm': streaming_hints=true marks the finish kernel's wide loads of a 16-bit stash "
            "and its stores as streaming: it needs reduction=deferred, wide_finish=true and "
            "bf16_stash=true or stash_terms=true (reduction=deferred, wide_finish=false, stash bf16)");
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             hinted(s);
                             s.bf16_stash = false;
                           }),
            "schedule for 'mm': streaming_hints=true marks the finish kernel's wide loads of a 16-bit stash "
            "and its stores as streaming: it needs reduction=deferred, wide_finish=true and "
            "bf16_stash=true or stash_terms=true (reduction=deferred, wide_finish=true, stash f32)");
}

TEST(ScheduleErrors, FinishReductions) {
  auto reducing = [](Schedule& s) {
    defer_layer_norm(s);
    s.finish_reductions = true;
  };
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  EXPECT_EQ(legality_error(ln, reducing), "(no error)");
  const std::string needs =
      "schedule for 'mm': finish_reductions=true has the finish kernel reduce each row from the stash: it "
      "needs reduction=deferred without online_softmax, stash_terms or finish_row_split, and first-stage "
      "reductions that read only carried tiles and inputs ";
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             reducing(s);
                             s.reduction = ReductionPlacement::kCta;
                           }),
            needs + "(reduction=cta, online_softmax=false, stash_terms=false, finish_row_split=false)");
  const FusionPlan wide_ln = plan_of("post_layernorm", 256, 128, 4096);  // four warps a row need N >= 2048
  EXPECT_EQ(legality_error(wide_ln,
                           [&](Schedule& s) {
                             reducing(s);
                             s.finish_row_split = true;
                           }),
            needs + "(reduction=deferred, online_softmax=false, stash_terms=false, finish_row_split=true)");
  // A softmax's maximum reads the GEMM's output, which its online form does not stash.
  const FusionPlan softmax = plan_of("gemm_softmax", 256, 128, 512);
  EXPECT_EQ(legality_error(softmax,
                           [&](Schedule& s) {
                             s.reduction = ReductionPlacement::kDeferred;
                             s.carried = ValueHome::kL2Stash;
                             s.online_softmax = s.finish_reductions = true;
                           }),
            needs + "(reduction=deferred, online_softmax=true, stash_terms=false, finish_row_split=false)");
}

TEST(ScheduleErrors, StashEvictLast) {
  auto deferred = [](Schedule& s) {
    defer_layer_norm(s);
    s.stash_evict_last = true;
  };
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512), deferred), "(no error)");
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                           [&](Schedule& s) {
                             deferred(s);
                             s.tma_store = s.bf16_stash = true;
                           }),
            "schedule for 'mm': stash_evict_last=true needs reduction=deferred with a stash in L2 stored "
            "element-wise or by TMA from the staged slot (carried=l2_stash, reduction=deferred, 1 carried "
            "tiles, tma_store=true, stash_in_slot=false)");
  // Stored by TMA from the staged residual's slot: legal, the boxes carry the policy.
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                           [&](Schedule& s) {
                             deferred(s);
                             s.bm = 64;
                             s.bn = 256;
                             s.tma_inputs = s.one_input_slot = s.bf16_stash = true;
                             s.tma_store = s.stash_in_slot = true;
                           }),
            "(no error)");
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                           [&](Schedule& s) {
                             deferred(s);
                             s.reduction = ReductionPlacement::kCta;
                           }),
            "schedule for 'mm': stash_evict_last=true needs reduction=deferred with a stash in L2 stored "
            "element-wise or by TMA from the staged slot (carried=l2_stash, reduction=cta, 1 carried tiles, "
            "tma_store=false, stash_in_slot=false)");
}

TEST(ScheduleErrors, CarriedTilesInRegisters) {
  const Plans p;
  EXPECT_EQ(legality_error(p.ln, [](Schedule&) {}),
            "schedule for 'mm': carried tiles in registers need one column tile per consumer warpgroup, but "
            "N=512 at BN=128 and "
            "cluster_n=1 gives 4: use carried=l2_stash");
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.cluster_n = 2;
                             s.reduction = ReductionPlacement::kCluster;
                           }),
            "schedule for 'mm': carried tiles in registers need one column tile per consumer warpgroup, but "
            "N=512 at BN=128 and "
            "cluster_n=2 gives 2: use carried=l2_stash");
}

TEST(ScheduleErrors, Budgets) {
  // One column tile of 256 plus one carried tile in registers: 256 accumulator registers.
  const FusionPlan rms = plan_of("post_rmsnorm", 256, 128, 256);
  EXPECT_EQ(legality_error(rms, [](Schedule& s) { s.bn = 256; }),
            "schedule for 'mm': 256 accumulator registers per thread (BN=256, 1 carried tiles) leave too few "
            "of the "
            "232 for the epilogue");
  const Plans p;
  EXPECT_EQ(legality_error(p.gemm,
                           [](Schedule& s) {
                             s.bn = 256;
                             s.stages = 5;
                           }),
            "schedule for 'mm': 246928 bytes of shared memory (stages=5, BM=128, BN=256) exceed the target's "
            "232448");
  // Five reductions end stage 0: the cluster exchange of 8 peers needs 5 slots per row, which the same
  // schedule without them would not.
  const te::Tensor X = te::placeholder({256, 64}, te::DType::bf16, "X");
  const te::Tensor W = te::placeholder({2048, 64}, te::DType::bf16, "W");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  std::vector<te::Var> c;
  for (int r = 0; r < 5; ++r) c.push_back(te::reduce_axis(2048, "c" + std::to_string(r)));
  const te::Tensor stats = te::compute(
      {256},
      [&](te::Var i) {
        return te::sum(mm(i, c[0]), {c[0]}) + te::max_reduce(mm(i, c[1]), {c[1]}) +
               te::min_reduce(mm(i, c[2]), {c[2]}) + te::sum(mm(i, c[3]), {c[3]}) +
               te::sum(mm(i, c[4]), {c[4]});
      },
      "stats");
  const te::Tensor out = te::compute(
      {256, 2048}, [&](te::Var i, te::Var j) { return mm(i, j) - stats(i); }, "out");
  const FusionPlan five = plan_fusion(te::Program({X, W}, {out}));
  auto big_cluster = [](Schedule& s) {
    s.bn = 256;
    s.cluster_n = 8;
    s.reduction = ReductionPlacement::kCluster;
    s.carried = ValueHome::kL2Stash;
  };
  EXPECT_EQ(legality_error(five, big_cluster),
            "schedule for 'mm': 238720 bytes of shared memory (stages=4, BM=128, BN=256) exceed the target's "
            "232448");
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 64, 2048), big_cluster), "(no error)");
  // Carried tiles in shared memory: post-LN N=2048 at BM=128, BN=128 over a cluster of 8 keeps two 128 x 128
  // f32 tiles a CTA (128 KB) beside a ring of 128 KB.
  EXPECT_EQ(
      legality_error(plan_of("post_layernorm", 256, 64, 2048),
                     [](Schedule& s) {
                       s.bn = 128;
                       s.cluster_n = 8;
                       s.reduction = ReductionPlacement::kCluster;
                       s.carried = ValueHome::kShared;
                     }),
      "schedule for 'mm': 271488 bytes of shared memory (stages=4, BM=128, BN=128, carried tiles 131072) "
      "exceed the target's 232448");
  EXPECT_EQ(legality_error(p.ln, [](Schedule& s) { s.batched_reads = true; }),
            "schedule for 'mm': batched_reads=true without carried tiles re-read from a stash "
            "(carried=registers, 1 carried tiles)");
  EXPECT_EQ(
      legality_error(rms, [](Schedule& s) { s.prefetch_inputs = true; }),
      "schedule for 'mm': prefetch_inputs=true without an input read per element whose rows are 16-byte "
      "aligned (N=256)");
  EXPECT_EQ(legality_error(rms,
                           [](Schedule& s) {
                             s.carried = ValueHome::kL2Stash;
                             s.carry_in_accumulator = true;
                           }),
            "schedule for 'mm': carry_in_accumulator=true needs carried=registers and exactly one carried "
            "tile other than the anchor, but carried=l2_stash and 1 carried tile(s)");
  EXPECT_EQ(legality_error(rms,
                           [](Schedule& s) {
                             s.carried = ValueHome::kL2Stash;
                             s.tma_inputs = true;
                           }),
            "schedule for 'mm': tma_inputs=true needs row reductions, carried=registers with one column tile "
            "per consumer warpgroup or a deferred reduction, a 16-bit input read per element or per column, "
            "and N a multiple of 8 (N=256, carried=l2_stash, 2 tile(s) per warpgroup)");
  EXPECT_EQ(legality_error(rms,
                           [](Schedule& s) {  // a tile at a time: the same stash, staged inputs
                             s.carried = ValueHome::kL2Stash;
                             s.reduction = ReductionPlacement::kDeferred;
                             s.tma_inputs = true;
                           }),
            "(no error)");
  EXPECT_EQ(legality_error(rms, [](Schedule& s) { s.fenced_exchange_arrive = true; }),
            "schedule for 'mm': fenced_exchange_arrive=true without a cluster exchange of row partials "
            "(cluster_n=1)");
  EXPECT_EQ(legality_error(rms, [](Schedule& s) { s.relaxed_exchange_wait = true; }),
            "schedule for 'mm': relaxed_exchange_wait=true without a cluster exchange of row partials "
            "(cluster_n=1)");
  EXPECT_EQ(
      legality_error(rms, [](Schedule& s) { s.online_softmax = true; }),
      "schedule for 'mm': online_softmax=true but no reduction is a sum of exp(x - m) over a tile computed "
      "alone in the stage after the row value m");
  EXPECT_EQ(
      legality_error(rms, [](Schedule& s) { s.one_pass_variance = true; }),
      "schedule for 'mm': one_pass_variance=true but no reduction is a sum of squared deviations from a "
      "row value of the stage before it");
  EXPECT_EQ(legality_error(p.ln,
                           [](Schedule& s) {
                             s.carried = ValueHome::kL2Stash;
                             s.deep_reads = true;
                           }),
            "schedule for 'mm': deep_reads=true without batched_reads=true: deep_reads deepens the batched "
            "re-reads' chunks");
  TargetLimits small;
  small.max_shared_memory_per_block = 100 * 1024;
  EXPECT_EQ(legality_error(
                p.gemm, [](Schedule&) {}, small),
            "schedule for 'mm': 132224 bytes of shared memory (stages=4, BM=128, BN=128) exceed the target's "
            "102400");
}

TEST(ScheduleJsonErrors, Fields) {
  const nlohmann::json good = to_json(Schedule{});
  auto parse_error = [](const nlohmann::json& json) { return error_of([&] { schedule_from_json(json); }); };
  nlohmann::json j = good;
  j["split_k"] = 2;
  EXPECT_EQ(parse_error(j), "schedule: unknown field 'split_k'");
  j = good;
  j.erase("stages");
  EXPECT_EQ(parse_error(j), "schedule: missing field 'stages'");
  j = good;
  j.erase("carried");
  EXPECT_EQ(parse_error(j), "schedule: missing field 'carried'");
  j = good;
  j["bn"] = "128";
  EXPECT_EQ(parse_error(j), "schedule.bn: expected an integer");
  j = good;
  j["bn"] = 128.5;
  EXPECT_EQ(parse_error(j), "schedule.bn: expected an integer");
  j = good;
  j["cluster_n"] = 1LL << 40;
  EXPECT_EQ(parse_error(j), "schedule.cluster_n: 1099511627776 is out of range");
  j = good;
  j["warp_roles"] = 1;
  EXPECT_EQ(parse_error(j), "schedule.warp_roles: expected a string");
  j = good;
  j["warp_roles"] = "pingpong";
  EXPECT_EQ(parse_error(j), "schedule.warp_roles: unknown value 'pingpong' (valid: cooperative, ping_pong)");
  j = good;
  j["reduction"] = "grid";
  EXPECT_EQ(parse_error(j), "schedule.reduction: unknown value 'grid' (valid: cta, cluster, deferred)");
  j = good;
  j["carried"] = "smem";
  EXPECT_EQ(parse_error(j), "schedule.carried: unknown value 'smem' (valid: registers, l2_stash, shared)");
  j = good;
  j["tma_store"] = "yes";
  EXPECT_EQ(parse_error(j), "schedule.tma_store: expected true or false");
  j = good;
  j["persistent"] = 1;
  EXPECT_EQ(parse_error(j), "schedule.persistent: expected true or false");
  EXPECT_EQ(parse_error(nlohmann::json::array()), "schedule: expected an object");
  // The caller's path prefixes every message.
  j = good;
  j["bk"] = nullptr;
  EXPECT_EQ(error_of([&] { schedule_from_json(j, "record[3].schedule"); }),
            "record[3].schedule.bk: expected an integer");
}

TEST(ScheduleErrors, GlobalExchange) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  auto grouped = [](Schedule& s) {
    s.cluster_n = 4;
    s.reduction = ReductionPlacement::kCluster;
    s.persistent = s.global_exchange = true;
  };
  EXPECT_EQ(legality_error(ln, grouped), "(no error)");
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             grouped(s);
                             s.persistent = false;
                           }),
            "schedule for 'mm': global_exchange=true exchanges row partials between the CTAs of a row block "
            "on the persistent grid: it needs row reductions combined across cluster_n > 1 CTAs "
            "(reduction=cluster) and persistent=true (reduction=cluster, cluster_n=4, persistent=false)");
  EXPECT_EQ(legality_error(plan_of("gemm", 256, 128, 512), [](Schedule& s) { s.global_exchange = true; }),
            "schedule for 'mm': global_exchange=true exchanges row partials between the CTAs of a row block "
            "on the persistent grid: it needs row reductions combined across cluster_n > 1 CTAs "
            "(reduction=cluster) and persistent=true (reduction=cta, cluster_n=1, persistent=false)");
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             grouped(s);
                             s.relaxed_exchange_wait = true;
                           }),
            "schedule for 'mm': fenced_exchange_arrive and relaxed_exchange_wait shape the exchange through "
            "distributed shared memory, which global_exchange=true replaces (fenced_exchange_arrive=false, "
            "relaxed_exchange_wait=true)");
}

}  // namespace
}  // namespace comfuse::schedule
