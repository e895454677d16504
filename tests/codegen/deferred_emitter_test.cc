// Deferred reductions: the main kernel's tiles leave their row partials in the workspace, and the finish
// kernel of the same source combines them a warp a row and runs the last stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
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
using test_programs::deferred_ping_pong;
using test_programs::kKey;
using test_programs::plan_of;

const std::string kFinishMarker = "// The deferred reduction's finish kernel";

// The main kernel's text with its name replaced (the name hashes the schedule): from the device helpers to
// the finish kernel.
std::string main_kernel_text(const KernelSource& k) {
  const std::size_t from = k.source.find("// ---- comfuse device helpers");
  const std::size_t to = k.source.find(kFinishMarker);
  EXPECT_NE(from, std::string::npos);
  EXPECT_NE(to, std::string::npos);
  std::string text = k.source.substr(from, to - from);
  for (std::size_t at = text.find(k.name); at != std::string::npos; at = text.find(k.name))
    text.replace(at, k.name.size(), "NAME");
  return text;
}

std::string finish_kernel_text(const KernelSource& k) {
  return k.source.substr(k.source.find(kFinishMarker));
}

// Deferred ping-pong 64 x 256 tiles with the residual and bias staged by TMA in two slots (which leave room
// for three stages, not four), the variance in one pass.
Schedule staged_ping_pong_256() {
  Schedule s = deferred_ping_pong();
  s.bn = 256;
  s.stages = 3;
  s.tma_inputs = s.one_pass_variance = true;
  return s;
}

// The kernel `with` a knob, with that knob's changes undone: each pair of `undo` replaced everywhere (the
// first by the second), the knob's device helpers (the block from `helpers` to the next blank line) taken
// out, and its name (which hashes the schedule) that of `without`. Equal to `without`'s whole text where the
// knob changes nothing else (the schedule in the header is among the pairs).
std::string undone(const KernelSource& with, const KernelSource& without,
                   const std::vector<std::pair<std::string, std::string>>& undo, const std::string& helpers) {
  std::string text = with.source;
  for (const auto& [from, to] : undo) {
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  }
  const std::size_t block = text.find(helpers);
  EXPECT_NE(block, std::string::npos) << helpers;
  if (block != std::string::npos) text.erase(block, text.find("\n\n", block) + 2 - block);
  for (std::size_t at = text.find(with.name); at != std::string::npos; at = text.find(with.name, at + 1))
    text.replace(at, with.name.size(), without.name);
  return text;
}

TEST(DeferredEmitter, TheFinishKernelCombinesTheRowsInASecondKernel) {
  const FusionPlan ln = plan_of("post_layernorm", 77, 72, 1000);
  Schedule s;
  s.carried = ValueHome::kL2Stash;
  s.one_pass_variance = true;
  s.reduction = ReductionPlacement::kDeferred;
  const KernelSource k = emit_kernel(ln, s, kKey);
  ASSERT_EQ(k.finish_name, k.name + "_finish");
  // The main kernel: a CTA a tile, as without reductions; the finish kernel: a warp a row.
  EXPECT_EQ(k.launch.grid_x, 1 * 8);
  EXPECT_EQ(k.launch.cluster_x, 1);
  EXPECT_FALSE(k.launch.row_blocks);
  EXPECT_EQ(k.launch.finish_grid_x, 10);  // ceil(77 / 8)
  EXPECT_EQ(k.launch.finish_block_x, 256);
  // The workspace: the carried f32 tile, then the sum and the (M2, count, mean) of each row of each of the 8
  // column tiles.
  const std::int64_t stash = 77 * 1000 * 4;
  EXPECT_EQ(k.stash_bytes, stash + 4 * 4 * 8 * 77);
  EXPECT_TRUE(contains(k.source, "constexpr size_t PARTS_BYTE = " + std::to_string(stash) + ";"));
  const std::size_t finish = k.source.find("void __launch_bounds__(256)\n" + k.finish_name + "(");
  ASSERT_NE(finish, std::string::npos);
  const std::string main_kernel = k.source.substr(0, finish), finish_kernel = k.source.substr(finish);
  // Each tile writes its partials after the quad's combine; nothing waits for other CTAs.
  EXPECT_TRUE(contains(main_kernel, "parts[((size_t)0 * N_TILES + n0 / BN) * M + grow] = red0_0[h];"));
  EXPECT_TRUE(contains(main_kernel, "parts[((size_t)3 * N_TILES + n0 / BN) * M + grow] = red0_1_c[h];"));
  EXPECT_FALSE(contains(main_kernel, "mbar_wait_cluster(&"));
  EXPECT_FALSE(contains(main_kernel, "consumers_sync(256)"));
  EXPECT_FALSE(contains(main_kernel, "// ---- stage 1 ----"));
  // The finish kernel: every column tile's partials combined with Chan's formula, then the last stage
  // along the row from the stash.
  EXPECT_TRUE(contains(finish_kernel, "for (int t = lane; t < N_TILES; t += 32)"));
  EXPECT_TRUE(
      contains(finish_kernel, "chan_combine(n, mean, m2, parts[((size_t)2 * N_TILES + t) * M + row]"));
  EXPECT_TRUE(contains(finish_kernel, "v = v + parts[((size_t)0 * N_TILES + t) * M + row];"));
  EXPECT_TRUE(contains(finish_kernel, "// ---- stage 1 ----"));
  EXPECT_TRUE(contains(finish_kernel, "const int gcol = n0 + (i >> 1) * 64 + lane * 2 + (i & 1);"));
  EXPECT_TRUE(contains(finish_kernel, "stash[((size_t)0 * M + grow) * N + gcol]"));
  EXPECT_FALSE(contains(finish_kernel, "wgmma"));
  // With its stash in bf16 through TMA: the main kernel's stash tile is staged and stored box by box, the
  // finish kernel's outputs still go straight to global memory.
  Schedule tma = s;
  tma.bf16_stash = tma.tma_store = true;
  const KernelSource staged = emit_kernel(ln, tma, kKey);
  // The stash's descriptor: over the carried tile's [M, N], 64 rows a box.
  EXPECT_EQ(std::count_if(staged.params.begin(), staged.params.end(),
                          [](const KernelParam& p) {
                            return p.kind == KernelParam::Kind::kTmaStash && p.tensor.name() == "summed" &&
                                   p.box_rows == 64;
                          }),
            1);
  const std::size_t staged_finish = staged.source.find(staged.finish_name + "(");
  const std::string staged_main = staged.source.substr(0, staged_finish);
  EXPECT_TRUE(
      contains(staged_main, "tma_store_2d(&tma_stash, stage_out + b * 64 * 64, n0 + 64 * b, m0 + a_row0);"));
  EXPECT_TRUE(contains(staged_main, "(u32)pend_stash0 | ((u32)f32_to_bf16(v_summed)"));
  EXPECT_FALSE(contains(staged.source.substr(staged_finish), "staged_offset"));
  // The same kernels with the placement in the main kernel have no finish kernel.
  s.reduction = ReductionPlacement::kCta;
  EXPECT_TRUE(emit_kernel(ln, s, kKey).finish_name.empty());
}

TEST(DeferredEmitter, FourWarpsARowTakeEveryFourthStep) {
  const FusionPlan softmax = plan_of("gemm_softmax", 77, 72, 2100);
  Schedule s;
  s.bm = 64;
  s.bn = 256;
  s.carried = ValueHome::kL2Stash;
  s.online_softmax = true;
  s.reduction = ReductionPlacement::kDeferred;
  const KernelSource one = emit_kernel(softmax, s, kKey);
  s.finish_row_split = true;
  const KernelSource four = emit_kernel(softmax, s, kKey);
  EXPECT_EQ(one.launch.finish_grid_x, 10);   // ceil(77 / 8)
  EXPECT_EQ(four.launch.finish_grid_x, 39);  // ceil(77 / 2)
  EXPECT_EQ(four.launch.finish_block_x, 256);
  // The main kernels are the same (past the header naming the schedule); only the finish kernel's rows and
  // steps move.
  std::string main_four = main_kernel_text(four);
  const std::string split_constant = "constexpr int ROW_SPLIT = 4;  // the finish kernel's warps a row\n";
  ASSERT_TRUE(contains(main_four, split_constant));
  main_four.erase(main_four.find(split_constant), split_constant.size());
  EXPECT_TRUE(main_four == main_kernel_text(one));
  const std::size_t at_four = four.source.find("// The deferred reduction's finish kernel");
  const std::string finish = four.source.substr(at_four);
  EXPECT_TRUE(contains(finish, "const int row = blockIdx.x * 2 + threadIdx.x / (32 * ROW_SPLIT);"));
  EXPECT_TRUE(contains(finish, "const int part = threadIdx.x / 32 % ROW_SPLIT;"));
  EXPECT_TRUE(contains(finish, "const bool row_writer = lane == 0 && part == 0;"));
  EXPECT_TRUE(contains(
      finish, "for (int n0 = part * (ROW_ELEMS / 2 * 64); n0 < N; n0 += ROW_SPLIT * (ROW_ELEMS / 2 * 64))"));
  // Every warp of the row combines all of the row's partials itself.
  EXPECT_TRUE(contains(finish, "for (int t = lane; t < N_TILES; t += 32)"));
  EXPECT_FALSE(contains(one.source, "ROW_SPLIT"));
}

TEST(DeferredEmitter, StashedTermsAreScaledByTheirColumnTilesFactor) {
  const FusionPlan softcap = plan_of("gemm_softcap_softmax", 127, 72, 1000);
  Schedule s = deferred_ping_pong();
  s.online_softmax = s.vector_loads = true;
  const KernelSource plain = emit_kernel(softcap, s, kKey);
  s.stash_terms = true;
  const KernelSource terms = emit_kernel(softcap, s, kKey);
  // Half the stash: bf16 terms where the capped logits were f32.
  const std::int64_t parts = 3 * 4 * 8 * 127;
  EXPECT_EQ(plain.stash_bytes, 127 * 1000 * 4 + parts);
  EXPECT_EQ(terms.stash_bytes, 127 * 1000 * 2 + parts);
  const std::size_t finish = terms.source.find(kFinishMarker);
  ASSERT_NE(finish, std::string::npos);
  const std::string main_kernel = terms.source.substr(0, finish), finish_kernel = terms.source.substr(finish);
  // The main kernel's element loop takes the maximum alone (no online update) and keeps x in the
  // accumulator; then the quad's maximum, the terms about it summed and stored in bf16 pairs, and the
  // partials. x itself is not stashed.
  EXPECT_TRUE(contains(main_kernel, "acc[i] = v_capped;"));
  EXPECT_TRUE(contains(main_kernel, "if (inb) red0_1_m[h] = fmaxf(red0_1_m[h], v_capped);"));
  EXPECT_FALSE(contains(main_kernel, "red0_1[h] *= expf("));
  EXPECT_FALSE(contains(main_kernel, "pend_stash0"));
  const std::size_t quad_max = main_kernel.find("m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));");
  const std::size_t term = main_kernel.find(
      "const float term = acc[i] == __int_as_float(0xff800000) ? 0.0f : expf((acc[i] - red0_1_m[h]));");
  const std::size_t partial =
      main_kernel.find("parts[((size_t)2 * N_TILES + n0 / BN) * M + grow] = red0_1_m[h];");
  ASSERT_NE(quad_max, std::string::npos);
  ASSERT_NE(term, std::string::npos);
  ASSERT_NE(partial, std::string::npos);
  EXPECT_LT(quad_max, term);
  EXPECT_LT(term, partial);
  EXPECT_TRUE(contains(main_kernel, "if (inb) red0_1[h] += term;"));
  EXPECT_TRUE(
      contains(main_kernel,
               "*(u32*)&stash[(size_t)grow * N + gcol - 1] = (u32)pend_term | ((u32)f32_to_bf16(term) << "
               "16);"));
  // The finish kernel: a factor a column tile from its maximum partial and the row's maximum, once a row;
  // then a multiplication an element where the exp was.
  EXPECT_TRUE(contains(finish_kernel, "__shared__ float tile_factors[8][N_TILES];"));
  EXPECT_TRUE(contains(finish_kernel,
                       "tile_factor[t] = expf(parts[((size_t)2 * N_TILES + t) * M + row] - row_sm_max[0]);"));
  EXPECT_TRUE(contains(finish_kernel, "lp_stash0 = inb ? *(const u32*)&stash["));
  EXPECT_TRUE(contains(finish_kernel, "const float v_sm_exp = (bf16_to_f32("));
  EXPECT_TRUE(contains(finish_kernel, " * (inb ? tile_factor[gcol / BN] : 0.0f));"));
  EXPECT_FALSE(contains(finish_kernel, "expf((v_capped"));
  EXPECT_TRUE(contains(finish_kernel_text(plain), "const float v_sm_exp = expf("));
  // The finish kernel divides by the row's sum as a multiplication by its reciprocal (one division a row).
  EXPECT_TRUE(contains(finish_kernel, "const float v_sm = (v_sm_exp * (1.0f / row_sm_sum[h]));"));
  EXPECT_TRUE(contains(finish_kernel_text(plain), "const float v_sm = (v_sm_exp / row_sm_sum[h]);"));
  // A plain softmax's x is the anchor: already in the accumulator.
  const KernelSource softmax = emit_kernel(plan_of("gemm_softmax", 127, 72, 1000), s, kKey);
  EXPECT_FALSE(contains(softmax.source, "acc[i] = v_"));
  EXPECT_TRUE(contains(softmax.source, "? 0.0f : expf((acc[i] - red0_1_m[h]));"));
}

TEST(DeferredEmitter, StashedTermsGoThroughTheStagingTileWithTheTmaStore) {
  // N = 1024: whole 64-column boxes (the TMA store's rows must be 16-byte aligned).
  const FusionPlan softcap = plan_of("gemm_softcap_softmax", 127, 72, 1024);
  Schedule s = deferred_ping_pong();
  s.online_softmax = s.vector_loads = s.stash_terms = true;
  const KernelSource plain = emit_kernel(softcap, s, kKey);
  s.tma_store = true;
  const KernelSource staged = emit_kernel(softcap, s, kKey);
  const std::string main_kernel = staged.source.substr(0, staged.source.find(kFinishMarker));
  // The terms' pairs go to the warpgroup's swizzled staging tile, not to the stash in global memory.
  EXPECT_FALSE(contains(main_kernel, "*(u32*)&stash["));
  const std::size_t read_done = main_kernel.find("if (store_leader) bulk_wait_read_all();");
  const std::size_t term_pair = main_kernel.find(
      "else *(u32*)((unsigned char*)stage_out + staged_offset(warp * 16 + (lane >> 2) + 8 * h, "
      "gcol - n0 - 1)) = (u32)pend_term | ((u32)f32_to_bf16(term) << 16);");
  const std::size_t partials =
      main_kernel.find("parts[((size_t)2 * N_TILES + n0 / BN) * M + grow] = red0_1_m[h];");
  const std::size_t fence = main_kernel.find("fence_proxy_async_shared();", term_pair);
  const std::size_t tma =
      main_kernel.find("tma_store_2d(&tma_stash, stage_out + b * 64 * 64, n0 + 64 * b, m0 + a_row0);");
  for (const std::size_t at : {read_done, term_pair, partials, fence, tma}) ASSERT_NE(at, std::string::npos);
  // The previous tile's store has read the staging tile before the terms go over it; the tile is stored
  // after its terms and partials.
  EXPECT_LT(read_done, term_pair);
  EXPECT_LT(term_pair, fence);
  EXPECT_LT(partials, tma);
  EXPECT_LT(fence, tma);
  // The kernels take the stash's TMA descriptor; the finish kernel's body and the stash's size are unchanged.
  EXPECT_TRUE(contains(main_kernel, "const __grid_constant__ TmaDescriptor tma_stash"));
  EXPECT_EQ(staged.stash_bytes, plain.stash_bytes);
  const auto body = [](const std::string& finish) { return finish.substr(finish.find("const int lane")); };
  EXPECT_EQ(body(finish_kernel_text(staged)), body(finish_kernel_text(plain)));
}

TEST(DeferredEmitter, AWideFinishMovesEightColumnsALaneAndChangesOnlyThePartialsInTheMainKernel) {
  const FusionPlan ln = plan_of("post_layernorm", 127, 72, 1000);
  Schedule s = deferred_ping_pong();
  s.one_pass_variance = s.bf16_stash = s.vector_loads = true;
  const KernelSource pairs = emit_kernel(ln, s, kKey);
  s.wide_finish = true;
  const KernelSource wide = emit_kernel(ln, s, kKey);
  // The main kernel is the same but for where it writes the partials
  // (AWideFinishReadsARowsPartialsSideBySide).
  auto without_partials = [](std::string text) {
    std::string kept;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("parts[") == std::string::npos && line.find("* const parts") == std::string::npos)
        kept += line + "\n";
    }
    return kept;
  };
  EXPECT_TRUE(without_partials(main_kernel_text(wide)) == without_partials(main_kernel_text(pairs)));
  const std::string finish = finish_kernel_text(wide);
  EXPECT_TRUE(contains(finish, "const int gcol = n0 + (i >> 3) * 256 + lane * 8 + (i & 7);"));
  // The stash, the per-column gamma and beta: eight bf16 columns as one 16-byte word at the group's first.
  EXPECT_TRUE(contains(finish, "if ((i & 7) == 0) {"));
  EXPECT_TRUE(contains(finish,
                       "const uint4 raw = inb ? *(const uint4*)(&stash[((size_t)0 * M + grow) * N + gcol]) : "
                       "make_uint4(0u, 0u, 0u, 0u);"));
  EXPECT_TRUE(contains(finish, "*(const uint4*)(&in_gamma[gcol])"));
  EXPECT_TRUE(contains(finish, "wide_stash0[i & 7]"));
  // The output leaves whole at the group's last column; nothing moves in pairs any more.
  EXPECT_TRUE(contains(finish, "if ((i & 7) == 7 && inb) {"));
  EXPECT_TRUE(contains(finish, "*(uint4*)(&out_Y[(size_t)grow * N + gcol - 7]) = make_uint4("));
  EXPECT_FALSE(contains(finish, "lp_stash0"));
  EXPECT_FALSE(contains(finish, "pend_Y = "));
  // An f32 stash: two float4 words a group.
  s.bf16_stash = false;
  const KernelSource f32 = emit_kernel(ln, s, kKey);
  EXPECT_TRUE(
      contains(finish_kernel_text(f32),
               "const float4 hi = inb ? *(const float4*)(&stash[((size_t)0 * M + grow) * N + gcol] + 4)"));
}

TEST(DeferredEmitter, AReversedFinishTakesTheLastRowsFirstAndChangesNothingElse) {
  const FusionPlan ln = plan_of("post_layernorm", 127, 72, 2056);  // wide enough for four warps a row
  Schedule s = deferred_ping_pong();
  s.one_pass_variance = s.bf16_stash = s.wide_finish = true;
  for (const bool split : {false, true}) {
    s.finish_row_split = split;
    s.reverse_finish = false;
    const KernelSource forward = emit_kernel(ln, s, kKey);
    s.reverse_finish = true;
    const KernelSource reverse = emit_kernel(ln, s, kKey);
    EXPECT_TRUE(main_kernel_text(reverse) == main_kernel_text(forward));
    const std::string rows =
        split ? "blockIdx.x * 2 + threadIdx.x / (32 * ROW_SPLIT)" : "blockIdx.x * 8 + threadIdx.x / 32";
    const auto named = [](const KernelSource& k) {  // the name hashes the schedule
      std::string text = finish_kernel_text(k);
      for (std::size_t at = text.find(k.finish_name); at != std::string::npos; at = text.find(k.finish_name))
        text.replace(at, k.finish_name.size(), "NAME");
      return text;
    };
    const std::string finish = named(reverse);
    EXPECT_TRUE(contains(finish, "  const int row = M - 1 - (" + rows + ");\n"));
    EXPECT_TRUE(contains(finish, "  if (row < 0) return;\n"));
    // Row by row the same code: undo the order and the bounds check, and the forward kernel remains.
    std::string undone;
    std::istringstream lines(finish);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("The last rows first") != std::string::npos) continue;
      if (line == "  const int row = M - 1 - (" + rows + ");") line = "  const int row = " + rows + ";";
      if (line == "  if (row < 0) return;") line = "  if (row >= M) return;";
      undone += line + "\n";
    }
    EXPECT_EQ(undone, named(forward));
  }
}

TEST(DeferredEmitter, AStashKeptInL2StoresWithAnEvictLastPolicyAndChangesNothingElse) {
  Schedule s = deferred_ping_pong();
  s.one_pass_variance = s.bf16_stash = s.wide_finish = s.reverse_finish = true;
  const FusionPlan even = plan_of("post_layernorm", 127, 72, 1000);
  const KernelSource plain = emit_kernel(even, s, kKey);
  s.stash_evict_last = true;
  const KernelSource kept = emit_kernel(even, s, kKey);
  const std::string main_kernel = main_kernel_text(kept);
  EXPECT_TRUE(contains(main_kernel, "createpolicy.fractional.L2::evict_last.b64"));
  EXPECT_TRUE(contains(main_kernel, "const u64 l2_keep = l2_evict_last_policy();"));
  // A bf16 pair as one 32-bit store with the policy (one element loop: no interior_tiles).
  const std::string pair =
      "else if (inb) st_keep((u32*)&(stash + (size_t)0 * M * N)[(size_t)grow * N + gcol - 1], "
      "(u32)pend_stash0 "
      "| ((u32)f32_to_bf16(v_summed) << 16), l2_keep);";
  EXPECT_EQ(source_text::count(main_kernel, pair), 1);
  EXPECT_FALSE(contains(main_kernel, "*(u32*)&(stash"));
  EXPECT_TRUE(finish_kernel_text(kept) == finish_kernel_text(plain));
  // An f32 stash of an odd N (the pairs finish walk): one element a store, through the float overload.
  s.bf16_stash = s.wide_finish = false;
  const std::string odd = main_kernel_text(emit_kernel(plan_of("post_layernorm", 127, 72, 999), s, kKey));
  EXPECT_TRUE(
      contains(odd, "if (inb) st_keep((float*)&(stash + (size_t)0 * M * N)[(size_t)grow * N + gcol], "));
  // The outputs of a plan that stores them in the main kernel are not the stash: no policy there.
  EXPECT_FALSE(contains(main_kernel, "st_keep((u32*)&out_"));
}

TEST(DeferredEmitter, AWideFinishReadsARowsPartialsSideBySide) {
  const FusionPlan softmax = plan_of("gemm_softmax", 127, 72, 1000);
  Schedule s = deferred_ping_pong();
  s.online_softmax = s.stash_terms = s.wide_finish = true;
  const KernelSource k = emit_kernel(softmax, s, kKey);
  const std::string main_kernel = main_kernel_text(k), finish = finish_kernel_text(k);
  // The same workspace ([M][XSLOTS][N_TILES] instead of [XSLOTS][N_TILES][M]): the max, the sum and its
  // maximum of each of a row's 8 column tiles.
  EXPECT_EQ(k.stash_bytes, 127 * 1000 * 2 + 3 * 4 * 8 * 127);
  EXPECT_TRUE(contains(main_kernel, "parts[((size_t)grow * XSLOTS + 0) * N_TILES + n0 / BN] = red0_0[h];"));
  EXPECT_TRUE(contains(main_kernel, "parts[((size_t)grow * XSLOTS + 2) * N_TILES + n0 / BN] = red0_1_m[h];"));
  EXPECT_TRUE(contains(finish, "v = fmaxf(v, parts[((size_t)row * XSLOTS + 0) * N_TILES + t]);"));
  EXPECT_TRUE(contains(finish,
                       "rescaled_combine(s, m, parts[((size_t)row * XSLOTS + 1) * N_TILES + t], "
                       "parts[((size_t)row * XSLOTS + 2) * N_TILES + t]);"));
  EXPECT_TRUE(contains(finish, "tile_factor[t] = expf(parts[((size_t)row * XSLOTS + 2) * N_TILES + t] - "));
  EXPECT_FALSE(contains(k.source, ") * M + row]"));
  EXPECT_FALSE(contains(k.source, ") * M + grow]"));
}

TEST(DeferredEmitter, OneInputSlotLoadsATilesInputsAfterItsOperands) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  const Schedule two = staged_ping_pong_256();
  Schedule one = two;
  one.one_input_slot = true;
  const KernelSource k2 = emit_kernel(ln, two, kKey), k1 = emit_kernel(ln, one, kKey);
  // Half the slots' bytes: R's 64 x 256 bf16 and b's 256, each padded to 1 KB.
  ASSERT_TRUE(contains(k1.source, "constexpr u32 IN_SLOT_BYTES = 33792,"));
  EXPECT_EQ(k2.launch.shared_bytes - k1.launch.shared_bytes, 33792);
  EXPECT_TRUE(contains(k1.source, "u64* in_full = (u64*)(sIn + IN_SLOT_BYTES);"));
  // Two slots: the inputs before the tile's K blocks; one slot: after them, waiting for the tile before.
  const std::size_t producer = k2.source.find("regs_decrease<");
  const std::size_t loads2 = k2.source.find("mbar_expect_tx(&in_full[slot], IN_TX_BYTES);", producer);
  ASSERT_NE(loads2, std::string::npos);
  EXPECT_LT(loads2, k2.source.find("for (int kb = 0; kb < K_BLOCKS; ++kb)", producer));
  const std::size_t k_loop =
      k1.source.find("for (int kb = 0; kb < K_BLOCKS; ++kb)", k1.source.find("regs_decrease<"));
  const std::size_t wait_empty = k1.source.find("mbar_wait(&in_empty[0], (t & 1) ^ 1);");
  const std::size_t loads1 = k1.source.find("mbar_expect_tx(&in_full[bar], IN_TX_BYTES);");
  ASSERT_NE(k_loop, std::string::npos);
  ASSERT_NE(wait_empty, std::string::npos);
  EXPECT_LT(k_loop, wait_empty);
  EXPECT_LT(wait_empty, loads1);
  EXPECT_FALSE(contains(k1.source, "in_slot = t & 1;"));
  // The tile's in_full barrier alternates as with two slots (one barrier's parity cannot tell apart the tile
  // before, this tile and this tile landed with the next loading), into the one slot.
  EXPECT_TRUE(contains(k1.source, "const int bar = t & 1;"));
  EXPECT_TRUE(contains(k1.source, "unsigned char* const dst = sIn;"));
  EXPECT_TRUE(contains(k1.source, "&tma_in_R, &in_full[bar], "));
  // The consumers wait on the tile's barrier and release the one slot after the main kernel's one stage.
  const std::size_t full = k1.source.find("mbar_wait(&in_full[t & 1], (t >> 1) & 1);");
  EXPECT_FALSE(contains(k1.source, "mbar_wait(&in_full[0], "));
  const std::size_t release = k1.source.find("if (lane == 0) mbar_arrive(&in_empty[in_slot]);");
  ASSERT_NE(full, std::string::npos);
  ASSERT_NE(release, std::string::npos);
  EXPECT_LT(full, release);
  EXPECT_LT(release, k1.source.find(kFinishMarker));
  // The finish kernel is the same.
  EXPECT_EQ(finish_kernel_text(k1), finish_kernel_text(k2));
  // Without tma_inputs: refused, naming what it needs and what the schedule has.
  Schedule alone = deferred_ping_pong();
  alone.one_pass_variance = alone.one_input_slot = true;
  try {
    emit_kernel(ln, alone, kKey);
    ADD_FAILURE() << "one_input_slot without tma_inputs";
  } catch (const CompileError& error) {
    EXPECT_TRUE(
        contains(error.what(), "one_input_slot=true needs tma_inputs=true and either reduction=deferred"))
        << error.what();
    EXPECT_TRUE(contains(error.what(), "(tma_inputs=false, reduction=deferred,")) << error.what();
  }
}

TEST(DeferredEmitter, StagedPairsReadEachPairOfStagedColumnsAsOneWord) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  Schedule one = staged_ping_pong_256();
  one.vector_loads = one.interior_tiles = true;
  Schedule pairs = one;
  pairs.staged_pairs = true;
  const KernelSource k1 = emit_kernel(ln, one, kKey), k2 = emit_kernel(ln, pairs, kKey);
  // One element a load before, each load in both loops (interior and tails) for R and b; with pairs, the
  // loads move to the pair's first element and the 16-bit load is left defined and unused.
  EXPECT_EQ(source_text::count(k1.source, "lds_u16(in_tile + "), 4);
  EXPECT_EQ(source_text::count(k1.source, "lds_u32("), 0);
  EXPECT_EQ(source_text::count(k2.source, "lds_u16(in_tile + "), 0);
  EXPECT_TRUE(contains(k2.source, "__device__ __forceinline__ u32 lds_u32(u32 address)"));
  EXPECT_TRUE(contains(k2.source, "u32 lp_R;  // this thread's two columns of 'R'"));
  EXPECT_TRUE(
      contains(k2.source, "lp_R = lds_u32(in_tile + 1024 + ((i >> 5) * BM + local_row0 + 8 * h) * 128"));
  EXPECT_TRUE(contains(k2.source, "lp_R = inb ? lds_u32(in_tile + 1024 + "));
  EXPECT_TRUE(contains(k2.source, "lp_b = gcol < N ? lds_u32(in_tile + 0 + "));
  // Element i takes its half of the word, as the global pairs do.
  EXPECT_TRUE(contains(k2.source, "bf16_to_f32((u16)((i & 1) ? lp_R >> 16 : lp_R & 0xffffu))"));
  EXPECT_EQ(finish_kernel_text(k1), finish_kernel_text(k2));
}

TEST(DeferredEmitter, BoxReadsLoadABoxsStagedPairsBeforeItsFirstStoreOverTheSlot) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  Schedule pairs = staged_ping_pong_256();
  pairs.vector_loads = pairs.interior_tiles = pairs.staged_pairs = true;
  pairs.bf16_stash = pairs.tma_store = pairs.stash_in_slot = true;
  Schedule boxed = pairs;
  boxed.box_reads = true;
  const KernelSource k1 = emit_kernel(ln, pairs, kKey), k2 = emit_kernel(ln, boxed, kKey);
  // Each pair is read into the box's registers at the box's first element, in both loops (interior and
  // tails), and taken from there at the pair's first element.
  EXPECT_EQ(source_text::count(k2.source, "bp_R[j] = lds_u32(in_tile + 1024 + "), 1);
  EXPECT_EQ(source_text::count(k2.source, "bp_R[j] = inb ? lds_u32(in_tile + 1024 + "), 1);
  EXPECT_EQ(source_text::count(k2.source, "lp_R = bp_R[(i & 31) >> 1];"), 2);
  EXPECT_EQ(source_text::count(k2.source, "lp_R = lds_u32("), 0);
  // The bias is a row of N: its pair is the same in both rows of the box and is loaded once.
  EXPECT_TRUE(contains(k2.source, "bp_b[j] = (j & 1) ? bp_b[j - 1] : lds_u32(in_tile + 0 + "));
  // In the emitted order, the box's loads come before the first store over the slot.
  const std::size_t load = k2.source.find("bp_R[j] = lds_u32("),
                    store = k2.source.find("else sts_u32(in_tile");
  ASSERT_NE(load, std::string::npos);
  ASSERT_NE(store, std::string::npos);
  EXPECT_LT(load, store);
  EXPECT_LT(k1.source.find("lp_R = lds_u32("), k1.source.find("else sts_u32(in_tile"));  // per pair before
  EXPECT_EQ(source_text::count(k1.source, "bp_R"), 0);
  EXPECT_EQ(finish_kernel_text(k1), finish_kernel_text(k2));
}

TEST(DeferredEmitter, StashInSlotWritesTheStashOverTheStagedResidualAndStoresItFromThere) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  Schedule staged = deferred_ping_pong();
  staged.bm = 128;
  staged.bn = 256;
  staged.stages = 3;
  staged.warp_roles = schedule::WarpRoles::kCooperative;
  staged.tma_inputs = staged.one_input_slot = staged.one_pass_variance = staged.bf16_stash = true;
  staged.interior_tiles = true;
  Schedule in_slot = staged;
  in_slot.tma_store = in_slot.stash_in_slot = true;
  const KernelSource k1 = emit_kernel(ln, staged, kKey), k2 = emit_kernel(ln, in_slot, kKey);
  const std::string main2 = k2.source.substr(0, k2.source.find(kFinishMarker));
  // Element-wise global stores of the stash before; with the knob none, and no staging tiles: each pair
  // goes over the residual's pair in the slot (R's boxes start 1024 bytes in, after b's).
  EXPECT_TRUE(contains(k1.source, "*(u32*)&(stash + (size_t)0 * M * N)["));
  EXPECT_FALSE(contains(main2, "*(u32*)&(stash + (size_t)0 * M * N)["));
  EXPECT_FALSE(contains(main2, "sOut"));
  EXPECT_FALSE(contains(main2, "stage_out"));
  EXPECT_TRUE(
      contains(main2,
               "else sts_u32(in_tile + 1024 + ((i >> 5) * BM + local_row0 + 8 * h) * 128 + ((((i >> 2) & "
               "7) ^ (lane >> 2)) << 4) + (lane & 3) * 4, (u32)pend_stash0 | "));
  // Each whole box of a warpgroup's 64 rows leaves by the stash's TMA map, in both loops (interior, tails).
  EXPECT_EQ(
      source_text::count(main2,
                         "tma_store_2d(&tma_stash, sIn + in_slot * IN_SLOT_BYTES + 1024 + ((i >> 5) * BM + "
                         "a_row0) * 128, n0 + 64 * (i >> 5), m0 + a_row0);"),
      2);
  // The slot is released only once the stores have read it, and the kernel ends once they are done.
  const std::size_t read = main2.find("if (store_leader) bulk_wait_read_all();");
  const std::size_t release = main2.find("if (lane == 0) mbar_arrive(&in_empty[in_slot]);");
  ASSERT_NE(read, std::string::npos);
  ASSERT_NE(release, std::string::npos);
  EXPECT_LT(main2.find("tma_store_2d(&tma_stash"), read);
  EXPECT_LT(read, release);
  EXPECT_LT(release, main2.find("if (store_leader) bulk_wait_all();"));
  // The launch passes the stash's TMA map, and the shared memory holds the ring and the one slot only.
  EXPECT_TRUE(std::any_of(k2.params.begin(), k2.params.end(),
                          [](const KernelParam& p) { return p.kind == KernelParam::Kind::kTmaStash; }));
  EXPECT_EQ(k2.launch.shared_bytes, k1.launch.shared_bytes);
  // The finish kernel is the same but for the map in its parameters (the two kernels take one list).
  const auto finish_body = [](const KernelSource& k) {
    const std::string text = finish_kernel_text(k);
    return text.substr(text.find("stash) {"));
  };
  EXPECT_EQ(finish_body(k1), finish_body(k2));
}

TEST(DeferredEmitter, StreamingHintsMarkTheLinesReadOrWrittenOnceAndChangeNothingElse) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  Schedule s = deferred_ping_pong();
  s.bn = 256;
  s.tma_inputs = s.one_input_slot = s.one_pass_variance = s.bf16_stash = s.wide_finish = true;
  s.tma_store = s.stash_in_slot = true;
  const KernelSource plain = emit_kernel(ln, s, kKey);
  s.streaming_hints = true;
  const KernelSource hinted = emit_kernel(ln, s, kKey);
  const std::string main_plain = main_kernel_text(plain), main_hinted = main_kernel_text(hinted);
  // The residual's boxes (read once, by their tile) carry the evict_first policy; the bias's (read by every
  // tile) do not.
  EXPECT_FALSE(contains(main_plain, "evict_first"));
  EXPECT_TRUE(contains(main_hinted, "createpolicy.fractional.L2::evict_first.b64"));
  EXPECT_TRUE(contains(main_hinted, "const u64 read_once = l2_evict_first_policy();"));
  EXPECT_TRUE(contains(main_hinted,
                       "tma_load_2d_hint(dst + 1024 + b * BM * 128, &tma_in_R, &in_full[bar], "
                       "tiles.n_tile(t) * BN + 64 * b, tiles.m_block * BM, read_once);"));
  EXPECT_TRUE(contains(main_hinted, "tma_load_2d(dst + 0 + b * 128, &tma_in_b, "));
  // The finish kernel loads the stash and stores Y as streaming accesses (one element loop: no
  // interior_tiles), and loads gamma and beta as before.
  const std::string finish = finish_kernel_text(hinted);
  EXPECT_EQ(source_text::count(finish, "__ldcs((const uint4*)(&stash[((size_t)0 * M + grow) * N + gcol]))"),
            1);
  EXPECT_EQ(source_text::count(finish, "__stcs((uint4*)(&out_Y[(size_t)grow * N + gcol - 7]), make_uint4("),
            1);
  EXPECT_FALSE(contains(finish, "*(uint4*)(&out_Y"));
  EXPECT_TRUE(contains(finish, "*(const uint4*)(&in_gamma[gcol])"));
  // Undo the hints and the kernels are the same text.
  EXPECT_EQ(undone(hinted, plain,
                   {{"\"streaming_hints\":true,", ""},
                    {"tma_load_2d_hint(", "tma_load_2d("},
                    {", read_once);", ");"},
                    {"          const u64 read_once = l2_evict_first_policy();\n", ""},
                    {"__ldcs((const uint4*)(&stash[((size_t)0 * M + grow) * N + gcol]))",
                     "*(const uint4*)(&stash[((size_t)0 * M + grow) * N + gcol])"},
                    {"__stcs((uint4*)(&out_Y[(size_t)grow * N + gcol - 7]), make_uint4(",
                     "*(uint4*)(&out_Y[(size_t)grow * N + gcol - 7]) = make_uint4("},
                    {") << 16)));", ") << 16));"}},
                   "// streaming_hints: L2 drops"),
            plain.source);
}

TEST(DeferredEmitter, AStashStoredFromTheSlotKeptInL2StoresItsBoxesWithTheEvictLastPolicy) {
  const FusionPlan ln = plan_of("post_layernorm", 256, 64, 1024);
  Schedule s = deferred_ping_pong();
  s.bn = 256;
  s.tma_inputs = s.one_input_slot = s.one_pass_variance = s.bf16_stash = s.wide_finish = true;
  s.tma_store = s.stash_in_slot = s.streaming_hints = true;
  const KernelSource plain = emit_kernel(ln, s, kKey);
  s.stash_evict_last = true;
  const KernelSource kept = emit_kernel(ln, s, kKey);
  const std::string main_kept = main_kernel_text(kept);
  // Each box of the stash leaves the slot by one TMA store with the policy (one element loop: no
  // interior_tiles); no element store carries it, and the finish kernel is the same.
  EXPECT_TRUE(contains(main_kept, "createpolicy.fractional.L2::evict_last.b64"));
  EXPECT_TRUE(contains(main_kept, ".bulk_group.L2::cache_hint [%0, {%2, %3}], [%1], %4;"));
  EXPECT_EQ(source_text::count(main_kept, "tma_store_2d_keep(&tma_stash, sIn + in_slot * IN_SLOT_BYTES + "),
            1);
  EXPECT_FALSE(contains(main_kept, "tma_store_2d(&tma_stash"));
  EXPECT_FALSE(contains(main_kept, "st_keep("));
  EXPECT_TRUE(finish_kernel_text(kept) == finish_kernel_text(plain));
  // Undo the policy and the kernels are the same text.
  EXPECT_EQ(undone(kept, plain,
                   {{",\"stash_evict_last\":true", ""},
                    {"tma_store_2d_keep(&tma_stash", "tma_store_2d(&tma_stash"},
                    {", l2_keep);", ");"},
                    {"  const u64 l2_keep = l2_evict_last_policy();  // for the stash's stores\n", ""}},
                   "// stash_evict_last: L2 keeps"),
            plain.source);
}

TEST(DeferredEmitter, FinishReductionsReduceEachRowFromItsStashAndLeaveTheMainKernelNoPartials) {
  const FusionPlan ln = plan_of("post_layernorm", 77, 72, 1000);
  Schedule s = deferred_ping_pong();
  s.one_pass_variance = s.bf16_stash = s.vector_loads = true;
  const KernelSource partials = emit_kernel(ln, s, kKey);
  s.finish_reductions = true;
  const KernelSource reduced = emit_kernel(ln, s, kKey);
  // The main kernel computes and stashes its tiles as before, and neither sums nor writes row partials.
  const std::string main_kernel = main_kernel_text(reduced);
  EXPECT_TRUE(contains(main_kernel_text(partials), "red0_1[h] = fmaf(d, d, red0_1[h]);"));
  EXPECT_FALSE(contains(main_kernel, "red0_1[h] = fmaf(d, d, red0_1[h]);"));
  EXPECT_FALSE(contains(main_kernel, "parts"));
  EXPECT_FALSE(contains(main_kernel, "__shfl_xor_sync"));
  EXPECT_TRUE(contains(main_kernel, "pend_stash0"));
  // The finish kernel walks the row's stash twice: its statistics, combined over the warp, then the norm.
  const std::string finish = finish_kernel_text(reduced);
  EXPECT_FALSE(contains(finish, "parts"));
  const std::size_t first = finish.find("red0_1[h] = fmaf(d, d, red0_1[h]);");
  const std::size_t combine = finish.find("float v = red0_0[h];");
  const std::size_t last = finish.find("// ---- stage 1 ----");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(combine, std::string::npos);
  ASSERT_NE(last, std::string::npos);
  EXPECT_LT(first, combine);
  EXPECT_LT(combine, last);
  EXPECT_TRUE(contains(finish, "v = v + __shfl_xor_sync(0xffffffffu, v, d);"));
}

TEST(DeferredEmitter, FinishReductionsKeepARowThatFitsInRegistersBetweenTheWalks) {
  Schedule s = deferred_ping_pong();
  s.one_pass_variance = s.bf16_stash = s.finish_reductions = s.wide_finish = s.streaming_hints = true;
  s.interior_tiles = true;  // the second walk's steps inside the row and its tail, each a loop
  const std::string stash_group = "(const uint4*)(&stash[((size_t)0 * M + grow) * N + gcol])";
  const std::string kept = "row_stash0[n0 / (ROW_ELEMS / 2 * 64) * (ROW_ELEMS / 8) + (i >> 3)]";
  // N = 4096 is 16 groups of eight a lane (8 steps of 512 columns, two groups each): kept. The first walk
  // loads the stash once, streaming, and keeps each group; the second takes the groups and loads none.
  const FusionPlan fits = plan_of("post_layernorm", 77, 72, 4096);
  ASSERT_TRUE(schedule::finish_row_in_registers(fits, s));
  const std::string walks = finish_kernel_text(emit_kernel(fits, s, kKey));
  EXPECT_EQ(source_text::count(walks,
                               "uint4 row_stash0[(N + ROW_ELEMS / 2 * 64 - 1) / (ROW_ELEMS / 2 * 64) * "
                               "(ROW_ELEMS / 8)];"),
            1);
  EXPECT_EQ(source_text::count(walks, "inb ? __ldcs(" + stash_group), 1);
  EXPECT_FALSE(contains(walks, "inb ? *" + stash_group));
  EXPECT_EQ(source_text::count(walks, "  " + kept + " = raw;"), 1);
  EXPECT_EQ(source_text::count(walks, "const uint4 raw = " + kept + ";"), 2);  // interior and tail steps
  EXPECT_EQ(source_text::count(walks, "#pragma unroll  // the kept groups' indices are constants"), 2);
  const std::size_t last = walks.find("// ---- stage 1 ----");
  ASSERT_NE(last, std::string::npos);
  EXPECT_LT(walks.find(kept + " = raw;"), last);
  EXPECT_GT(walks.find("const uint4 raw = " + kept + ";"), last);
  // One step more (N = 4104, 18 groups) and the second walk loads the row again, with the streaming hint on
  // its loads alone (the first walk's lines are read again).
  const FusionPlan longer = plan_of("post_layernorm", 77, 72, 4104);
  ASSERT_FALSE(schedule::finish_row_in_registers(longer, s));
  const std::string twice = finish_kernel_text(emit_kernel(longer, s, kKey));
  EXPECT_FALSE(contains(twice, "row_stash0"));
  EXPECT_FALSE(contains(twice, "#pragma unroll  // the kept groups' indices are constants"));
  EXPECT_TRUE(contains(twice, "inb ? *" + stash_group));
  EXPECT_TRUE(contains(twice, "inb ? __ldcs(" + stash_group));
  EXPECT_LT(twice.find("inb ? *" + stash_group), twice.find("inb ? __ldcs(" + stash_group));
  // An f32 stash is not kept (its groups and pairs are twice the registers).
  Schedule f32 = s;
  f32.bf16_stash = f32.streaming_hints = false;
  EXPECT_FALSE(schedule::finish_row_in_registers(fits, f32));
  // The pairs walk keeps a pair a lane per two columns of a step (N = 4096: 64), with batched reads off in
  // both walks (the second loads nothing to batch); without pairs (vector_loads off) nothing is kept.
  Schedule pairs = s;
  pairs.wide_finish = pairs.streaming_hints = false;
  pairs.vector_loads = pairs.batched_reads = pairs.deep_reads = true;
  ASSERT_TRUE(schedule::finish_row_in_registers(fits, pairs));
  const std::string kept_pairs = finish_kernel_text(emit_kernel(fits, pairs, kKey));
  const std::string pair = "row_stash0[n0 / (ROW_ELEMS / 2 * 64) * (ROW_ELEMS / 2) + (i >> 1)]";
  EXPECT_EQ(source_text::count(kept_pairs,
                               "u32 row_stash0[(N + ROW_ELEMS / 2 * 64 - 1) / (ROW_ELEMS / 2 * 64) * "
                               "(ROW_ELEMS / 2)];"),
            1);
  EXPECT_EQ(source_text::count(kept_pairs, "lp_stash0 = inb ? *(const u32*)&stash["), 1);
  EXPECT_EQ(source_text::count(kept_pairs, pair + " = lp_stash0;"), 1);
  EXPECT_EQ(source_text::count(kept_pairs, "lp_stash0 = " + pair + ";"), 2);
  EXPECT_FALSE(contains(kept_pairs, "pre0["));
  EXPECT_FALSE(schedule::finish_row_in_registers(longer, pairs));
  Schedule single = pairs;
  single.vector_loads = false;
  EXPECT_FALSE(schedule::finish_row_in_registers(fits, single));
  EXPECT_FALSE(contains(finish_kernel_text(emit_kernel(fits, single, kKey)), "row_stash0"));
}

}  // namespace
}  // namespace comfuse::codegen
