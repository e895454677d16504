// The row partials' exchange across the CTAs of a row block: through global memory in groups of a
// cooperative launch (global_exchange) against the DSMEM exchange of a hardware cluster, and the fourth stage
// that leaving the exchange buffers and the staged vectors out of shared memory makes room for.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "codegen/kernel_source.h"
#include "codegen/source_text.h"
#include "codegen/test_programs.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::ReductionPlacement;
using schedule::Schedule;
using schedule::ValueHome;
using source_text::contains;
using test_programs::kKey;
using test_programs::plan_of;

// Cooperative 128 x 128 tiles whose rows combine across `cluster_n` CTAs in the kernel, on the persistent
// grid.
Schedule persistent_cooperative(int cluster_n) {
  Schedule s;
  s.bm = 128;
  s.bn = 128;
  s.stages = 3;
  s.cluster_n = cluster_n;
  s.reduction = cluster_n > 1 ? ReductionPlacement::kCluster : ReductionPlacement::kCta;
  s.carried = ValueHome::kRegisters;
  s.persistent = true;
  return s;
}

int xslots_of(const std::string& source) {
  std::smatch match;
  const std::regex xslots("XSLOTS = ([0-9]+);");
  EXPECT_TRUE(std::regex_search(source, match, xslots));
  return match.empty() ? 0 : std::stoi(match[1]);
}

std::vector<std::string> staged_inputs(const KernelSource& kernel) {
  std::vector<std::string> names;
  for (const KernelParam& p : kernel.params) {
    if (p.kind == KernelParam::Kind::kTmaIn) names.push_back(p.tensor.name());
  }
  return names;
}

TEST(ExchangeEmitter, GroupsOfACooperativeLaunchReplaceTheClusterAndBringAZeroedWorkspace) {
  // M = 300 at BM = 128: 3 row blocks, 8 CTAs each.
  const FusionPlan ln = plan_of("post_layernorm", 300, 64, 1000);
  Schedule s = persistent_cooperative(8);
  const KernelSource cluster = emit_kernel(ln, s, kKey);
  EXPECT_EQ(cluster.launch.cluster_x, 8);
  EXPECT_EQ(cluster.launch.group_x, 1);
  EXPECT_FALSE(cluster.launch.cooperative);
  EXPECT_FALSE(cluster.zeroed_workspace);
  EXPECT_EQ(cluster.stash_bytes, 0);  // the carried tiles stay in registers
  s.global_exchange = true;
  const KernelSource group = emit_kernel(ln, s, kKey);
  EXPECT_EQ(group.launch.cluster_x, 1);
  EXPECT_EQ(group.launch.group_x, 8);
  EXPECT_TRUE(group.launch.cooperative);
  EXPECT_EQ(group.launch.grid_x, 3 * 8);
  EXPECT_TRUE(group.zeroed_workspace);
  // Two counters a row block (the one exchanging group's rounds: the cooperative warpgroups share it; and
  // the CTAs done), padded to 16 bytes; then two buffers of every CTA's partials a row block.
  const int xslots = xslots_of(group.source);
  EXPECT_EQ(group.stash_bytes, 32 + 4 * 3 * 1 * 2 * 8 * xslots * 128);
  EXPECT_TRUE(contains(group.source, "constexpr size_t XCOUNT_BYTE = 0, XCH_BYTE = 32;"));
  // Its DSMEM buffers leave shared memory: 2 x 8 peers x XSLOTS x 128 rows of floats.
  EXPECT_EQ(cluster.launch.shared_bytes - group.launch.shared_bytes, 4 * 2 * 8 * xslots * 128);
}

TEST(ExchangeEmitter, PartialsGoThroughL2WithOneReleaseAndAcquiringPollsARound) {
  const FusionPlan ln = plan_of("post_layernorm", 300, 64, 1000);
  Schedule s = persistent_cooperative(8);
  s.global_exchange = true;
  const std::string source = emit_kernel(ln, s, kKey).source;
  EXPECT_TRUE(contains(source, "const u32 cta_rank = blockIdx.x % CLUSTER_N;"));
  EXPECT_FALSE(contains(source, "st_cluster_f32(map_to_rank"));
  EXPECT_FALSE(contains(source, "mbar_wait_cluster(&"));
  EXPECT_FALSE(contains(source, "mbar_init(&xbar"));
  EXPECT_FALSE(contains(source, "cluster_sync();"));
  // Stored past L1, then released by one thread after the warpgroups' barrier, polled, then loaded past L1.
  const std::size_t store = source.find("__stcg(&xch[((buf * CLUSTER_N + cta_rank) * XSLOTS + 0) * BM");
  const std::size_t arrive = source.find("atomicAdd(xcount, 1u);");
  const std::size_t poll = source.find("while (ld_acquire_gpu(xcount) < (u32)(CLUSTER_N * (xround + 1))) {}");
  const std::size_t load = source.find("__ldcg(&xch[((buf * CLUSTER_N + peer) * XSLOTS + 0) * BM");
  ASSERT_NE(store, std::string::npos);
  ASSERT_NE(arrive, std::string::npos);
  ASSERT_NE(poll, std::string::npos);
  ASSERT_NE(load, std::string::npos);
  EXPECT_LT(store, arrive);
  EXPECT_LT(arrive, poll);
  EXPECT_LT(poll, load);
  EXPECT_TRUE(contains(source.substr(store, arrive - store), "consumers_sync(CONSUMERS * 128);"));
  EXPECT_TRUE(contains(source.substr(store, arrive - store), "__threadfence();"));
  EXPECT_TRUE(contains(source.substr(poll, load - poll), "consumers_sync(CONSUMERS * 128);"));
  // A two-pass variance exchanges twice a row block: two rounds.
  EXPECT_EQ(source_text::count(source, "++xround;"), 2);
  // The counters go back to zero once the group's last CTA is done, after the walk.
  const std::size_t reset = source.find("if (atomicAdd(&xcount[XGROUPS], 1u) == (u32)(CLUSTER_N - 1))");
  ASSERT_NE(reset, std::string::npos);
  EXPECT_LT(load, reset);
  EXPECT_TRUE(
      contains(source.substr(reset), "for (int g = 0; g <= XGROUPS; ++g) atomicExch(&xcount[g], 0u);"));
}

TEST(ExchangeEmitter, PingPongWarpgroupsThatOwnTheirRowsExchangeOnTheirOwn) {
  const FusionPlan ln = plan_of("post_layernorm", 300, 64, 1000);
  Schedule s = test_programs::cluster_ping_pong_256();
  s.global_exchange = true;
  const KernelSource kernel = emit_kernel(ln, s, kKey);
  const std::string& source = kernel.source;
  EXPECT_TRUE(contains(source, "constexpr int XGROUPS = 2;"));
  EXPECT_TRUE(contains(source, "u32* const wg_xcount = xcount + consumer;"));
  EXPECT_TRUE(contains(source, "float* wgx = (float*)(order + 2);           // no combine buffers"));
  EXPECT_TRUE(contains(source, "atomicAdd(wg_xcount, 1u);"));
  EXPECT_TRUE(contains(source, "exchange_sync(consumer);"));
  EXPECT_TRUE(contains(source, R"("bar.sync %0, 128;" :: "r"(4 + consumer))"));
  EXPECT_FALSE(contains(source, "consumers_sync(CONSUMERS * 128);\n      if (threadIdx.x == 128)"));
  // Counters: (2 + 1) words for each of the 5 row blocks, padded to 16 bytes.
  EXPECT_TRUE(contains(source, "constexpr size_t XCOUNT_BYTE = 0, XCH_BYTE = 64;"));
  EXPECT_EQ(kernel.stash_bytes, 64 + 4 * 5 * 2 * 2 * 4 * xslots_of(source) * 64);
}

TEST(ExchangeEmitter, TheFreedBuffersAndUnstagedVectorsMakeRoomForAFourthStage) {
  // The suite's post-LN K = 1024 N = 1024 cluster form: ping-pong 64 x 256 in fours, its inputs staged.
  const FusionPlan ln = plan_of("post_layernorm", 16384, 1024, 1024);
  Schedule s = test_programs::cluster_ping_pong_256();
  s.one_pass_variance = s.interior_tiles = s.tma_inputs = true;
  const KernelSource three = emit_kernel(ln, s, kKey);
  EXPECT_EQ(staged_inputs(three), (std::vector<std::string>{"b", "R", "gamma", "beta"}));
  s.stages = 4;
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);
  s.global_exchange = true;
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);  // 2 KB short
  s.unstaged_vectors = true;
  const KernelSource four = emit_kernel(ln, s, kKey);
  EXPECT_LE(four.launch.shared_bytes, 232448);
  EXPECT_EQ(staged_inputs(four), (std::vector<std::string>{"R"}));
  EXPECT_TRUE(contains(four.source, "bf16_to_f32(in_gamma[gcol])"));
  EXPECT_TRUE(
      contains(four.source, "constexpr u32 IN_SLOT_BYTES = 32768, IN_TX_BYTES = 32768, IN_BOXES = 4;"));
}

TEST(ExchangeEmitter, TheKnobsAreRefusedWhereThereIsNothingToChange) {
  const FusionPlan ln = plan_of("post_layernorm", 300, 64, 1000);
  Schedule s = persistent_cooperative(8);
  s.global_exchange = true;
  s.persistent = false;  // nothing would keep a group's CTAs resident together
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);
  s = persistent_cooperative(1);
  s.global_exchange = true;  // no peers
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);
  s = persistent_cooperative(8);
  s.global_exchange = s.fenced_exchange_arrive = true;  // a DSMEM knob
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);
  s = persistent_cooperative(8);
  s.unstaged_vectors = true;  // nothing staged
  EXPECT_THROW(emit_kernel(ln, s, kKey), CompileError);
  s.tma_inputs = true;
  EXPECT_NO_THROW(emit_kernel(ln, s, kKey));
}

}  // namespace
}  // namespace comfuse::codegen
