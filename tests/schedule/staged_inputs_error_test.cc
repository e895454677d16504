// Illegal schedules of the inputs staged in shared memory by TMA and what builds on them (one slot, pairs,
// boxes, the stash over the slot, vectors left out of it): each CompileError message asserted.
#include <gtest/gtest.h>

#include "schedule/legality_error.h"
#include "schedule/schedule.h"

namespace comfuse::schedule {
namespace {

using legality_error_test::defer_layer_norm;
using legality_error_test::legality_error;
using legality_error_test::plan_of;

const std::string needs =
    "schedule for 'mm': one_input_slot=true needs tma_inputs=true and either reduction=deferred, or row "
    "reductions combined in the kernel whose staged inputs only the first stage reads (unstaged_vectors=true "
    "or resident_vectors=true leaves out the vectors later stages read) and no output stored over the slot ";

TEST(ScheduleErrors, OneInputSlot) {
  auto staged = [](Schedule& s) {
    defer_layer_norm(s);
    s.tma_inputs = s.one_input_slot = true;
  };
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512), staged), "(no error)");
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                           [&](Schedule& s) {
                             staged(s);
                             s.tma_inputs = false;
                           }),
            needs +
                "(tma_inputs=false, reduction=deferred, staged inputs read after the first stage=no, "
                "output stored in place=no)");
}

TEST(ScheduleErrors, OneInputSlotInTheKernel) {
  // A cluster form releases the one slot after its first stage: the later stages' vectors must be left out
  // of it, and no output stored over it.
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  auto in_kernel = [](Schedule& s) {
    s.cluster_n = 4;
    s.reduction = ReductionPlacement::kCluster;
    s.tma_inputs = s.unstaged_vectors = s.one_input_slot = true;
  };
  EXPECT_EQ(legality_error(ln, in_kernel), "(no error)");
  // Also with the centered sums in the first stage (the residual is still read there alone).
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             in_kernel(s);
                             s.one_pass_variance = true;
                           }),
            "(no error)");
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             in_kernel(s);
                             s.unstaged_vectors = false;  // gamma and beta staged, read by the last stage
                           }),
            needs +
                "(tma_inputs=true, reduction=cluster, staged inputs read after the first stage=yes, "
                "output stored in place=no)");
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             in_kernel(s);
                             s.tma_store = true;  // the output over the residual's slot, in the last stage
                           }),
            needs +
                "(tma_inputs=true, reduction=cluster, staged inputs read after the first stage=no, "
                "output stored in place=yes)");
  // Without row reductions nothing is combined in the kernel: a GEMM with a bias has no one-slot form.
  EXPECT_EQ(legality_error(plan_of("gemm_bias_relu", 256, 128, 512),
                           [&](Schedule& s) { s.tma_inputs = s.one_input_slot = true; })
                .rfind(needs, 0),
            0u);
}

TEST(ScheduleErrors, StagedPairs) {
  auto staged = [](Schedule& s) {
    defer_layer_norm(s);
    s.tma_inputs = s.vector_loads = s.staged_pairs = true;
  };
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512), staged), "(no error)");
  EXPECT_EQ(
      legality_error(plan_of("post_layernorm", 256, 128, 512),
                     [&](Schedule& s) {
                       staged(s);
                       s.vector_loads = false;
                     }),
      "schedule for 'mm': staged_pairs=true reads staged inputs in pairs, which needs tma_inputs=true and "
      "vector_loads=true (tma_inputs=true, vector_loads=false)");
}

TEST(ScheduleErrors, BoxReads) {
  auto boxed = [](Schedule& s) {
    defer_layer_norm(s);
    s.tma_inputs = s.vector_loads = s.staged_pairs = s.box_reads = true;
  };
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512), boxed), "(no error)");
  EXPECT_EQ(legality_error(plan_of("post_layernorm", 256, 128, 512),
                           [&](Schedule& s) {
                             boxed(s);
                             s.staged_pairs = false;
                           }),
            "schedule for 'mm': box_reads=true loads a box's staged pairs ahead of its elements, which needs "
            "staged_pairs=true (staged_pairs=false, tma_inputs=true)");
}

TEST(ScheduleErrors, StashInSlot) {
  auto in_slot = [](Schedule& s) {
    defer_layer_norm(s);
    s.bf16_stash = s.tma_store = s.tma_inputs = s.one_input_slot = s.stash_in_slot = true;
  };
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  EXPECT_EQ(legality_error(ln, in_slot), "(no error)");
  const std::string needs =
      "schedule for 'mm': stash_in_slot=true writes a deferred reduction's stash over a staged input tile "
      "and stores it by TMA from there: it needs reduction=deferred, tma_store=true, and tma_inputs=true "
      "staging a 16-bit input tile that no stage after the first reads ";
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             in_slot(s);
                             s.tma_store = false;
                           }),
            needs + "(reduction=deferred, tma_store=false, tma_inputs=true)");
  // Nothing staged: the slot to write over is missing (tma_inputs' own check comes first with one slot).
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             in_slot(s);
                             s.tma_inputs = s.one_input_slot = false;
                           }),
            needs + "(reduction=deferred, tma_store=true, tma_inputs=false)");
  // LN-relu reads no input tile (no residual): it stages its vectors only.
  EXPECT_EQ(legality_error(plan_of("gemm_layernorm_relu", 256, 128, 512), [&](Schedule& s) { in_slot(s); }),
            needs + "(reduction=deferred, tma_store=true, tma_inputs=true)");
}

TEST(ScheduleErrors, ResidentVectors) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  auto resident = [](Schedule& s) {
    s.cluster_n = 4;  // BN = 128: one column tile a CTA
    s.reduction = ReductionPlacement::kCluster;
    s.tma_inputs = s.resident_vectors = true;
  };
  EXPECT_EQ(legality_error(ln, resident), "(no error)");
  // With the vectors resident, the slot holds the residual alone: one slot applies in the kernel.
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             resident(s);
                             s.one_input_slot = true;
                           }),
            "(no error)");
  const std::string refused =
      "schedule for 'mm': resident_vectors=true loads the per-column vectors once for the kernel: it needs "
      "tma_inputs=true, row reductions combined in the kernel, one column tile a CTA (N <= BN x cluster_n), "
      "a staged per-column vector and unstaged_vectors=false ";
  EXPECT_EQ(
      legality_error(ln,
                     [&](Schedule& s) {
                       resident(s);
                       s.cluster_n = 2;  // two column tiles a CTA, one a ping-pong warpgroup
                       s.warp_roles = WarpRoles::kPingPong;
                       s.bm = 64;
                     }),
      refused + "(tma_inputs=true, reduction=cluster, N=512, BN=128, cluster_n=2, unstaged_vectors=false)");
  EXPECT_EQ(
      legality_error(ln,
                     [&](Schedule& s) {
                       resident(s);
                       s.unstaged_vectors = true;
                     }),
      refused + "(tma_inputs=true, reduction=cluster, N=512, BN=128, cluster_n=4, unstaged_vectors=true)");
  EXPECT_EQ(
      legality_error(ln,
                     [&](Schedule& s) {
                       defer_layer_norm(s);
                       s.tma_inputs = s.resident_vectors = true;
                     }),
      refused + "(tma_inputs=true, reduction=deferred, N=512, BN=128, cluster_n=1, unstaged_vectors=false)");
}

TEST(ScheduleErrors, UnstagedVectors) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 128, 512);
  auto staged = [](Schedule& s) {
    s.cluster_n = 4;
    s.reduction = ReductionPlacement::kCluster;
    s.tma_inputs = s.unstaged_vectors = true;
  };
  EXPECT_EQ(legality_error(ln, staged), "(no error)");
  const std::string refused =
      "schedule for 'mm': unstaged_vectors=true leaves the per-column vectors out of the staged slot: it "
      "needs tma_inputs=true and 16-bit inputs read both per element and per column (tma_inputs=";
  EXPECT_EQ(legality_error(ln,
                           [&](Schedule& s) {
                             staged(s);
                             s.tma_inputs = false;
                           }),
            refused + "false)");
}

}  // namespace
}  // namespace comfuse::schedule
