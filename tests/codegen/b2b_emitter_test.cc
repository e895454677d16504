// The fused back-to-back kernel's emitter: MLPs at tail shapes compile with NVRTC to sm_90a cubins without
// spills; what it does not generate yet is refused by name. (Running it is the GPU test's job.)
#include "codegen/b2b_emitter.h"

#include <gtest/gtest.h>

#include "codegen/source_text.h"
#include "runtime/nvrtc_compiler.h"
#include "te/error_of.h"
#include "te/workloads.h"

namespace comfuse::codegen {
namespace {

using source_text::count;

const std::string kKey = "sha256:b2b0000000000000000000000000000000000000000000000000000000000000";

KernelSource emit(const std::string& workload, const te::Shape& shape, int stages = 4, bool overlap = false) {
  return emit_b2b_kernel(schedule::plan_b2b(te::build_workload(workload, shape)),
                         B2BSchedule{stages, overlap}, kKey);
}

using Workloads = std::vector<std::pair<std::string, te::Shape>>;

// `check(workload, schedule, kernel, what)` for each workload's kernel at each schedule, `what` naming both.
template <typename Check>
void for_each_kernel(const Workloads& workloads, const std::vector<B2BSchedule>& schedules, Check check) {
  for (const auto& [workload, shape] : workloads) {
    const schedule::B2BPlan plan = schedule::plan_b2b(te::build_workload(workload, shape));
    for (const B2BSchedule& schedule : schedules) {
      check(workload, schedule, emit_b2b_kernel(plan, schedule, kKey),
            workload + " " + schedule::to_string(schedule));
    }
  }
}

void expect_compiles_without_spills(const KernelSource& source, const std::string& what) {
  runtime::CompileOptions options;
  options.program_name = source.name + ".cu";
  const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
  const runtime::ResourceUsage& usage = compiled.kernels.at(source.name);
  EXPECT_EQ(usage.spill_store_bytes, 0) << what << "\n" << compiled.log;
  EXPECT_EQ(usage.spill_load_bytes, 0) << what;
  // ptxas serialises wgmma (waits after each) when it cannot keep an in-flight accumulator untouched.
  EXPECT_EQ(compiled.log.find("serialized"), std::string::npos) << what << "\n" << compiled.log;
}

TEST(B2BEmitter, MlpsCompileWithoutSpills) {
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}},
           {"mlp_gelu", {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}},
           {"mlp_relu", {{"M", 128}, {"K", 256}, {"N", 96}, {"O", 256}}}}) {
    const KernelSource source = emit(workload, shape);
    EXPECT_EQ(source.launch.block_x, 384);
    EXPECT_EQ(source.launch.grid_x, (shape.at("M") + 127) / 128);
    EXPECT_LE(source.launch.shared_bytes, 227 * 1024);
    ASSERT_EQ(source.params.size(), 4u);
    EXPECT_EQ(source.params[2].box_rows, shape.at("O"));
    expect_compiles_without_spills(source, workload);
  }
}

TEST(B2BEmitter, AttentionWithTheOnlineSoftmaxCompilesWithoutSpills) {
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"attention", {{"BH", 3}, {"L", 100}, {"D", 64}, {"CAUSAL", 1}}},
           {"attention", {{"BH", 64}, {"L", 2048}, {"D", 128}, {"CAUSAL", 0}}},
           {"target_attention", {{"BH", 1024}, {"LQ", 32}, {"LK", 1024}, {"D", 64}}}}) {
    const KernelSource source = emit(workload, shape);
    const std::int64_t batch = shape.at("BH");
    const std::int64_t rows = shape.count("LQ") ? shape.at("LQ") : shape.at("L");
    EXPECT_EQ(source.launch.grid_x, batch * ((rows + 127) / 128));
    // V is read N-major, in boxes of 64 of its rows.
    EXPECT_EQ(source.params[2].box_rows, 64);
    EXPECT_NE(
        source.source.find(
            "smem_descriptor_mn_sw128(sw2 + (((c) & 1) * BN1 / 64 + s / 4) * O * 64 + (s % 4) * 16 * 64)"),
        std::string::npos);
    EXPECT_NE(source.source.find(", p, 1, 1, 1;"), std::string::npos);  // wgmma with B transposed
    // The running max rescales the sum and the accumulator; the sum divides at the end.
    EXPECT_NE(source.source.find("sum_P_sum[h] *= scale[h];"), std::string::npos);
    EXPECT_NE(source.source.find("acc2[i] *= scale[(i >> 1) & 1];"), std::string::npos);
    EXPECT_NE(source.source.find("factor[h] = 1.0f / sum_P_sum[h];"), std::string::npos);
    // The numerator is rounded to bf16 for GEMM2: exp is the hardware's approximate one.
    EXPECT_NE(source.source.find("const float v_P_exp = exp2_approx(fmaf(a_S_"), std::string::npos);
    EXPECT_EQ(source.source.find("= expf("), std::string::npos);
    EXPECT_LE(source.launch.shared_bytes, 227 * 1024);
    expect_compiles_without_spills(source, workload);
  }
}

TEST(B2BEmitter, OverlappedChunksKeepTwoBuffersInFlight) {
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}},
           {"mlp_gelu", {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}},
           {"attention", {{"BH", 3}, {"L", 100}, {"D", 64}, {"CAUSAL", 1}}},
           {"attention", {{"BH", 64}, {"L", 2048}, {"D", 128}, {"CAUSAL", 0}}}}) {
    const KernelSource source = emit(workload, shape, 4, true);
    EXPECT_NE(source.source.find("float acc1_a[BN1 / 2], acc1_b[BN1 / 2];"), std::string::npos);
    // GEMM2 of a chunk is issued before the wait for the next chunk's GEMM1, which leaves it in flight.
    const std::size_t gemm2 = source.source.find("wgmma_second(acc2, hfrag_a[s]");
    const std::size_t wait_one = source.source.find("wgmma_wait<1>();", gemm2);
    EXPECT_NE(gemm2, std::string::npos);
    EXPECT_NE(wait_one, std::string::npos);
    EXPECT_NE(source.source, emit(workload, shape, 4, false).source);
    expect_compiles_without_spills(source, workload + " overlapped");
  }
}

TEST(B2BEmitter, TileKnobsCompileWithoutSpills) {
  // One consumer warpgroup (bm=64, two CTAs an SM at 128 registers a thread) and 128-column chunks, one chunk
  // at a time and overlapped: attention with D=128 (the largest accumulator bm=64 takes) and the small MLP.
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"attention", {{"BH", 2}, {"L", 300}, {"D", 128}, {"CAUSAL", 1}}},
           {"mlp_gelu", {{"M", 300}, {"K", 128}, {"N", 200}, {"O", 128}}}}) {
    for (const int bm : {64, 128}) {
      for (const bool overlap : {false, true}) {
        const B2BSchedule schedule{3, overlap, bm, 128};
        const schedule::B2BPlan plan = schedule::plan_b2b(te::build_workload(workload, shape));
        if (overlap && plan.online()) {  // spills at D=128: refused by the schedule's legality
          EXPECT_NE(te::error_of([&] { emit_b2b_kernel(plan, schedule, kKey); }).find("spill"),
                    std::string::npos);
          continue;
        }
        const KernelSource source = emit_b2b_kernel(plan, schedule, kKey);
        const std::string what = workload + " " + schedule::to_string(schedule);
        EXPECT_EQ(source.launch.block_x, bm == 64 ? 256 : 384) << what;
        EXPECT_EQ(source.launch.grid_x, (shape.count("BH") ? 2 : 1) * ((300 + bm - 1) / bm)) << what;
        EXPECT_EQ(source.params[0].box_rows, bm) << what;
        EXPECT_EQ(source.params[1].box_rows, 128) << what;
        EXPECT_NE(source.source.find(bm == 64 ? "__launch_bounds__(256, 2)" : "__launch_bounds__(384, 1)"),
                  std::string::npos)
            << what;
        // A chunk's W2 part is two boxes of 64 along the chained axis.
        EXPECT_NE(source.source.find("for (int j = 0; j < BN1 / 64; ++j)"), std::string::npos) << what;
        expect_compiles_without_spills(source, what);
      }
    }
  }
}

TEST(B2BEmitter, PingPongWarpgroupsTakeTurnsAndCompileWithoutSpills) {
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"attention", {{"BH", 2}, {"L", 300}, {"D", 128}, {"CAUSAL", 1}}},
           {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}}}) {
    for (const int bn1 : {64, 128}) {
      const B2BSchedule schedule{3, false, 128, bn1, true};
      const KernelSource source =
          emit_b2b_kernel(schedule::plan_b2b(te::build_workload(workload, shape)), schedule, kKey);
      const std::string& text = source.source;
      // Consumer 1 lets consumer 0 go first; a turn issues GEMM2 of the last chunk and GEMM1 of this one,
      // then passes the turn before it waits.
      EXPECT_NE(text.find("if (consumer == 1) turn_pass(0);"), std::string::npos);
      const std::size_t wait =
          text.find("turn_wait(consumer);", text.find("for (int c = 1; c < chunks; ++c)"));
      const std::size_t gemm2 = text.find("wgmma_second(acc2, hfrag[s]", wait);
      const std::size_t gemm1 = text.find("wgmma_first(acc1", gemm2);
      const std::size_t pass = text.find("turn_pass(consumer ^ 1);", gemm1);
      const std::size_t done = text.find("wgmma_wait<0>();", pass);
      EXPECT_NE(wait, std::string::npos);
      EXPECT_NE(done, std::string::npos) << "wait " << wait << " gemm2 " << gemm2 << " gemm1 " << gemm1;
      EXPECT_NE(text.find("if (consumer == 0) turn_pass(1);"), std::string::npos);
      expect_compiles_without_spills(source, workload + " " + schedule::to_string(schedule));
    }
  }
}

TEST(B2BEmitter, FullChunksFoldTheColumnChecks) {
  const KernelSource source = emit("attention", {{"BH", 2}, {"L", 256}, {"D", 64}, {"CAUSAL", 0}});
  EXPECT_NE(source.source.find("constexpr bool FULL_CHUNKS = N % BN1 == 0;"), std::string::npos);
  EXPECT_NE(source.source.find("const bool valid = FULL_CHUNKS || gcol < N;"), std::string::npos);
  expect_compiles_without_spills(source, "attention L=256");
}

TEST(B2BEmitter, TheSoftmaxScaleIsTakenOnceARowAndInTheExpFFMA) {
  // S_scaled = S / sqrt(64) and its causal mask keep S: the block max is of S, times 1/8 once a row, and
  // exp(S_masked - max) is 2^(S·(log2 e / 8) - max·log2 e).
  const KernelSource source = emit("attention", {{"BH", 2}, {"L", 256}, {"D", 64}, {"CAUSAL", 1}});
  EXPECT_NE(source.source.find("a_S_scaled[i] = acc1[i];  // times (0.125f)"), std::string::npos);
  EXPECT_NE(source.source.find("m *= (0.125f);"), std::string::npos);
  EXPECT_NE(source.source.find("exp2_approx(fmaf(a_S_masked[i], (0.180336878f), -(safe_max[h])"),
            std::string::npos);
  EXPECT_EQ(source.source.find("acc1[i] * (0.125f)"), std::string::npos);
  expect_compiles_without_spills(source, "causal attention L=256");
}

TEST(B2BEmitter, CausalMaskSkipsTheChunksAboveTheDiagonal) {
  const KernelSource causal = emit("attention", {{"BH", 2}, {"L", 300}, {"D", 64}, {"CAUSAL", 1}});
  EXPECT_NE(causal.source.find("const int chunks = min(CHUNKS, max(0, m0 + BM - 1 + (0)) / BN1 + 1);"),
            std::string::npos);
  // The producer loads and the consumers compute the same number of chunks.
  EXPECT_NE(causal.source.find("for (int c = 0; c < chunks; ++c)"), std::string::npos);
  // The row blocks that walk the most chunks start first (longest first), every batch's at once.
  EXPECT_NE(causal.source.find("const int m0 = (M_BLOCKS - 1 - blockIdx.x / BATCH) * BM;"),
            std::string::npos);
  const KernelSource full = emit("attention", {{"BH", 2}, {"L", 300}, {"D", 64}, {"CAUSAL", 0}});
  EXPECT_NE(full.source.find("const int chunks = CHUNKS;"), std::string::npos);
  EXPECT_NE(full.source.find("const int m0 = (blockIdx.x % M_BLOCKS) * BM;"), std::string::npos);
}

TEST(B2BEmitter, PersistentCtasWalkRowBlocksAndCompileWithoutSpills) {
  const Workloads workloads = {{"attention", {{"BH", 2}, {"L", 300}, {"D", 128}, {"CAUSAL", 1}}},
                               {"attention", {{"BH", 2}, {"L", 300}, {"D", 64}, {"CAUSAL", 0}}},
                               {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}}};
  const std::vector<B2BSchedule> schedules = {B2BSchedule{3, false, 128, 64, true, true},
                                              B2BSchedule{3, true, 64, 64, false, true},
                                              B2BSchedule{3, false, 128, 128, false, true}};
  for_each_kernel(
      workloads, schedules,
      [](const std::string& workload, const B2BSchedule& schedule, const KernelSource& source,
         const std::string& what) {
        const std::string& text = source.source;
        // grid_x counts the row blocks; the launch keeps as many CTAs as fit the SMs.
        EXPECT_TRUE(source.launch.persistent) << what;
        const std::int64_t rows = workload == "mlp_relu" ? 300 : 2 * ((300 + schedule.bm - 1) / schedule.bm);
        EXPECT_EQ(source.launch.grid_x,
                  workload == "mlp_relu" ? (rows + schedule.bm - 1) / schedule.bm : rows)
            << what;
        EXPECT_EQ(source.launch.ctas_per_multiprocessor, schedule.bm == 64 ? 2 : 1) << what;
        // Producer and consumers walk the same blocks; X has two buffers, the ring and W2 run on across
        // blocks.
        EXPECT_EQ(count(text, "for (int block = blockIdx.x; block < BLOCKS; block += gridDim.x, ++round)"), 2)
            << what;
        EXPECT_NE(text.find("mbar_wait(&empty_x[round & 1], ((round >> 1) & 1) ^ 1);"), std::string::npos);
        EXPECT_NE(text.find("mbar_wait(&full_x[round & 1], (round >> 1) & 1);"), std::string::npos);
        EXPECT_NE(text.find("if ((threadIdx.x & 127) == 0) mbar_arrive(&empty_x[round & 1]);"),
                  std::string::npos);
        EXPECT_NE(text.find("const int it = (q + c) * K_BLOCKS + kb;"), std::string::npos) << what;
        EXPECT_EQ(count(text, "q += chunks;"), 2) << what;
        if (schedule.pingpong) {
          // The turns run on across blocks: consumer 1's last turn of a block hands over the next block's
          // first.
          EXPECT_EQ(count(text, "if (consumer == 1) turn_pass(0);"), 1) << what;
          EXPECT_NE(
              text.find("if (consumer == 0 || block + (int)gridDim.x < BLOCKS) turn_pass(consumer ^ 1);"),
              std::string::npos)
              << what;
        }
        expect_compiles_without_spills(source, what);
      });
}

TEST(B2BEmitter, OperandInSharedMemoryFeedsASharedAWgmmaAndCompilesWithoutSpills) {
  const Workloads workloads = {{"attention", {{"BH", 2}, {"L", 300}, {"D", 128}, {"CAUSAL", 1}}},
                               {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}}};
  // The overlapped 128-column chunks at D=128 spill with the operand in registers; here they do not.
  const std::vector<B2BSchedule> schedules = {B2BSchedule{2, true, 128, 128, false, false, true},
                                              B2BSchedule{3, false, 128, 64, true, true, true},
                                              B2BSchedule{3, false, 64, 128, false, false, true}};
  for_each_kernel(
      workloads, schedules,
      [](const std::string&, const B2BSchedule& schedule, const KernelSource& source,
         const std::string& what) {
        const std::string& text = source.source;
        EXPECT_EQ(text.find("u32 hfrag"), std::string::npos) << what;
        // Each thread's packed pairs go where the register fragment has them, in X's swizzled layout; then
        // the fence and the warpgroup's barrier before GEMM2 reads them through a descriptor.
        EXPECT_NE(text.find("const int piece = (col / 8) ^ (row % 8);"), std::string::npos) << what;
        EXPECT_NE(text.find("shared_ready(consumer);"), std::string::npos) << what;
        EXPECT_NE(text.find("fence.proxy.async.shared::cta"), std::string::npos) << what;
        EXPECT_NE(text.find("wgmma_second(acc2, desc_a, desc_b,"), std::string::npos) << what;
        if (schedule.overlap) {
          EXPECT_NE(text.find("u16* box = sop + 1 * BN1 * BM"), std::string::npos) << what;  // two buffers
        }
        expect_compiles_without_spills(source, what);
      });
}

TEST(B2BEmitter, TheTmaStoreStagesTheTileInXsBufferAndCompilesWithoutSpills) {
  const Workloads workloads = {{"attention", {{"BH", 2}, {"L", 192}, {"D", 64}, {"CAUSAL", 1}}},
                               {"mlp_gelu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}}};
  const std::vector<B2BSchedule> schedules = {B2BSchedule{4, true, 128, 128, false, true, true, true},
                                              B2BSchedule{3, false, 128, 64, true, true, false, true},
                                              B2BSchedule{4, false, 64, 64, false, true, false, true}};
  for_each_kernel(
      workloads, schedules,
      [](const std::string&, const B2BSchedule&, const KernelSource& source, const std::string& what) {
        const std::string& text = source.source;
        // The output leaves through its TMA map, not a pointer; X's buffer goes back only after the store
        // has read it.
        EXPECT_NE(text.find("const __grid_constant__ TmaDescriptor tma_out"), std::string::npos) << what;
        EXPECT_EQ(text.find("* __restrict__ out_"), std::string::npos) << what;
        EXPECT_EQ(source.params.back().kind, KernelParam::Kind::kTmaOut) << what;
        const std::size_t store = text.find("tma_store_2d(&tma_out, sx + b * BM * 64 + a_row0 * 64");
        const std::size_t read = text.find("bulk_wait_read_all();", store);
        const std::size_t give_back = text.find("mbar_arrive(&empty_x[round & 1]);", read);
        EXPECT_NE(store, std::string::npos) << what;
        EXPECT_NE(read, std::string::npos) << what;
        EXPECT_NE(give_back, std::string::npos) << what;
        EXPECT_EQ(text.find("mbar_arrive(&empty_x[round & 1])"), give_back) << what << ": given back once";
        expect_compiles_without_spills(source, what);
      });
  // The direct store has none of it.
  const schedule::B2BPlan mlp =
      schedule::plan_b2b(te::build_workload("mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}));
  const std::string direct = emit_b2b_kernel(mlp, B2BSchedule{4, false, 128, 64, false, true}, kKey).source;
  EXPECT_EQ(direct.find("tma_store_2d"), std::string::npos);
  EXPECT_NE(direct.find("* __restrict__ out_"), std::string::npos);
}

TEST(B2BEmitter, SameInputsSameSource) {
  const te::Shape shape = {{"M", 256}, {"K", 64}, {"N", 128}, {"O", 64}};
  EXPECT_EQ(emit("mlp_gelu", shape).source, emit("mlp_gelu", shape).source);
  EXPECT_NE(emit("mlp_gelu", shape, 3).source, emit("mlp_gelu", shape, 4).source);
}

TEST(B2BEmitter, RefusesWhatItDoesNotGenerateYet) {
  // What the kernel does not take (b2b_support_test.cc has each rule), then illegal schedules.
  EXPECT_EQ(te::error_of([] {
              emit("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 1024}});
            }),
            "fused back-to-back kernel: GEMM2 has O=1024 columns: one warpgroup's accumulator holds a "
            "multiple of 8 up to 256");
  EXPECT_EQ(te::error_of([] {
              emit("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 64}}, 9);
            }),
            "fused back-to-back kernel: stages=9 is outside [2, 6]");
  EXPECT_EQ(
      te::error_of([] {
        emit("mlp_relu", {{"M", 64}, {"K", 256}, {"N", 64}, {"O", 64}}, 3);
      }),
      "fused back-to-back kernel: stages=3 is below the 4 K blocks of K=256: GEMM1 of a chunk holds all its "
      "W1 boxes in the ring until it completes");
}

}  // namespace
}  // namespace comfuse::codegen
