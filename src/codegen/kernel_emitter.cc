// The fused kernel's skeleton: parameters, shared memory, warp roles, the TMA producer, the wgmma mainloop
// and the tile loops that drive the Stage-Stream epilogue.
#include <algorithm>

#include "codegen/code_stream.h"
#include "codegen/device_prelude.h"
#include "codegen/epilogue_emitter.h"
#include "codegen/kernel_source.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::FusionPlan;
using schedule::Role;
using schedule::Schedule;
using schedule::ValueHome;
using schedule::WarpRoles;

constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

std::string element_type(te::DType dtype) {
  switch (dtype) {
    case te::DType::bf16:
    case te::DType::f16:
      return "u16";
    case te::DType::f32:
      return "float";
    case te::DType::i32:
      return "int";
    case te::DType::boolean:
      break;
  }
  throw InternalError("no kernel parameter type for dtype bool");
}

// The wgmma.mma_async call for one m64nBNk16 step: BN/2 f32 accumulators per thread.
void emit_wgmma_function(CodeStream& out, int bn, te::DType operand) {
  const int regs = bn / 2;
  const std::string type = operand == te::DType::bf16 ? "bf16" : "f16";
  out.line("// One m64n" + std::to_string(bn) +
           "k16 tensor-core step: d += A(desc_a) * B(desc_b)^T, or d = ... when scale_d is 0.");
  out.open("__device__ __forceinline__ void wgmma_step(float (&d)[" + std::to_string(regs) +
           "], u64 desc_a, u64 desc_b, int scale_d)");
  std::string registers;
  for (int r = 0; r < regs; ++r) registers += (r ? ", %" : "%") + std::to_string(r);
  out.line("asm volatile(");
  out.line("    \"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + std::to_string(regs + 2) + ", 0;\\n\"");
  out.line("    \"wgmma.mma_async.sync.aligned.m64n" + std::to_string(bn) + "k16.f32." + type + "." + type +
           " {" + registers + "}, %" + std::to_string(regs) + ", %" + std::to_string(regs + 1) +
           ", p, 1, 1, 0, 0;\\n}\\n\"");
  std::string outputs;
  for (int r = 0; r < regs; ++r)
    outputs += std::string(r ? ", " : "") + "\"+f\"(d[" + std::to_string(r) + "])";
  out.line("    : " + outputs);
  out.line("    : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));");
  out.close();
}

class KernelEmitter {
 public:
  KernelEmitter(const FusionPlan& plan, const Schedule& schedule, const std::string& key)
      : plan_(plan), s_(schedule), key_(key) {}

  KernelSource emit() {
    KernelSource result;
    result.schedule = s_;
    result.name = "comfuse_" + plan_.anchor.tensor.name() + "_" + key_.substr(key_.find(':') + 1, 12);
    std::map<const te::TensorNode*, std::string> param_names;
    result.params.push_back({KernelParam::Kind::kTmaA, plan_.anchor.a});
    result.params.push_back({KernelParam::Kind::kTmaB, plan_.anchor.b});
    for (const auto& input : plan_.epilogue_inputs) {
      result.params.push_back({KernelParam::Kind::kInput, input.tensor});
      param_names[input.tensor.get()] = "in_" + input.tensor.name();
    }
    for (const te::Tensor& output : plan_.program.outputs()) {
      result.params.push_back({KernelParam::Kind::kOutput, output});
      param_names[output.get()] = "out_" + output.name();
    }
    result.params.push_back({KernelParam::Kind::kStash, te::Tensor()});
    if (s_.carried == ValueHome::kL2Stash) {
      result.stash_bytes =
          static_cast<std::int64_t>(plan_.carried_tiles.size()) * plan_.anchor.m * plan_.anchor.n * 4;
    }
    EpilogueEmitter epilogue(plan_, s_, param_names);
    xslots_ = std::max(1, epilogue.max_reductions_per_stage());

    const std::int64_t m_blocks = ceil_div(plan_.anchor.m, s_.bm);
    const std::int64_t n_tiles = ceil_div(plan_.anchor.n, s_.bn);
    result.launch.block_x = s_.threads();
    result.launch.cluster_x = plan_.has_reductions() ? s_.cluster_n : 1;
    if (plan_.has_reductions()) {
      result.launch.grid_x = static_cast<int>(m_blocks * s_.cluster_n);
    } else if (s_.warp_roles == WarpRoles::kPingPong) {
      result.launch.grid_x = static_cast<int>(m_blocks * ceil_div(n_tiles, 2));
    } else {
      result.launch.grid_x = static_cast<int>(m_blocks * n_tiles);
    }
    result.launch.shared_bytes = static_cast<int>(shared_bytes());

    CodeStream out;
    header(out);
    out.raw(device_prelude());
    out.line();
    constants(out, m_blocks, n_tiles);
    emit_wgmma_function(out, s_.bn, plan_.anchor.a.dtype());
    out.line();
    tile_mapping(out);
    kernel(out, result, epilogue);
    result.source = out.str();
    return result;
  }

 private:
  std::int64_t shared_bytes() const {
    const std::int64_t ring = static_cast<std::int64_t>(s_.stages) * (s_.bm + s_.bn) * 64 * 2;
    const std::int64_t barriers = 8 * (2 * s_.stages + 4);
    const std::int64_t exchange = s_.cluster_n > 1 ? 4LL * 2 * s_.cluster_n * xslots_ * s_.bm : 0;
    const bool pairs = s_.warp_roles == WarpRoles::kPingPong && plan_.has_reductions();
    const std::int64_t warpgroup_combine = pairs ? 4LL * 2 * 2 * xslots_ * s_.bm : 0;
    return 1024 + ring + barriers + exchange + warpgroup_combine;
  }

  void header(CodeStream& out) const {
    out.line("// Generated by comfuse. Do not edit: regenerate from the workload and the schedule.");
    out.line("// workload: " + key_);
    out.line("// schedule: " + schedule::to_json(s_).dump());
    std::string plan_text = schedule::to_string(plan_);
    std::size_t start = 0;
    while (start < plan_text.size()) {
      const std::size_t end = plan_text.find('\n', start);
      out.line("// plan: " + plan_text.substr(start, end - start));
      start = end == std::string::npos ? plan_text.size() : end + 1;
    }
    out.line();
  }

  void constants(CodeStream& out, std::int64_t m_blocks, std::int64_t n_tiles) const {
    const auto& a = plan_.anchor;
    out.line("constexpr int M = " + std::to_string(a.m) + ", N = " + std::to_string(a.n) +
             ", K = " + std::to_string(a.k) + ";");
    out.line("constexpr int BM = " + std::to_string(s_.bm) + ", BN = " + std::to_string(s_.bn) +
             ", BK = 64;");
    out.line("constexpr int STAGES = " + std::to_string(s_.stages) +
             ", CONSUMERS = " + std::to_string(s_.consumer_warpgroups()) +
             ", CLUSTER_N = " + std::to_string(s_.cluster_n) + ", XSLOTS = " + std::to_string(xslots_) + ";");
    out.line("constexpr int K_BLOCKS = " + std::to_string(ceil_div(a.k, 64)) +
             ", M_BLOCKS = " + std::to_string(m_blocks) + ", N_TILES = " + std::to_string(n_tiles) +
             ", GROUP_M = " + std::to_string(s_.raster_group_m) + ";");
    out.line("constexpr u32 STAGE_BYTES = (BM + BN) * BK * 2;");
    out.line();
  }

  // Which (row block, column tile) the t-th tile of this CTA is, and how many tiles the CTA has.
  void tile_mapping(CodeStream& out) const {
    out.line("// The CTA's tiles: the same sequence for the producer and every consumer warpgroup.");
    out.open("struct TileSequence");
    out.line("int m_block, first_tile, count, stride;");
    out.open("__device__ __forceinline__ int n_tile(int t) const");
    out.line("return first_tile + t * stride;");
    out.close();
    out.close(";");
    out.line(
        "// Rasterisation: consecutive CTAs walk GROUP_M row blocks before moving right, so that they share "
        "B in L2.");
    out.open("__device__ __forceinline__ void raster(int linear, int columns, int& m_block, int& column)");
    out.line("const int group = linear / (GROUP_M * columns);");
    out.line("const int first_m = group * GROUP_M;");
    out.line("const int group_size = min(M_BLOCKS - first_m, GROUP_M);");
    out.line("m_block = first_m + (linear % (GROUP_M * columns)) % group_size;");
    out.line("column = (linear % (GROUP_M * columns)) / group_size;");
    out.close();
    out.open("__device__ __forceinline__ TileSequence cta_tiles(u32 cta_rank)");
    out.line("TileSequence seq;");
    if (plan_.has_reductions()) {
      out.line("// The cluster owns BM whole rows; its CTAs take every CLUSTER_N-th column tile.");
      out.line("seq.m_block = blockIdx.x / CLUSTER_N;");
      out.line("seq.first_tile = cta_rank;");
      out.line("seq.stride = CLUSTER_N;");
      out.line("seq.count = (N_TILES - (int)cta_rank + CLUSTER_N - 1) / CLUSTER_N;");
    } else if (s_.warp_roles == WarpRoles::kPingPong) {
      out.line("// Two neighbouring column tiles of one row block, one per consumer warpgroup.");
      out.line("int pair;");
      out.line("raster(blockIdx.x, (N_TILES + 1) / 2, seq.m_block, pair);");
      out.line("seq.first_tile = 2 * pair;");
      out.line("seq.stride = 1;");
      out.line("seq.count = min(2, N_TILES - 2 * pair);");
    } else {
      out.line("int n_tile;");
      out.line("raster(blockIdx.x, N_TILES, seq.m_block, n_tile);");
      out.line("seq.first_tile = n_tile;");
      out.line("seq.stride = 1;");
      out.line("seq.count = 1;");
    }
    out.line("return seq;");
    out.close();
    out.line();
  }

  void kernel(CodeStream& out, const KernelSource& result, const EpilogueEmitter& epilogue) const {
    std::string params =
        "const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b";
    for (const KernelParam& p : result.params) {
      switch (p.kind) {
        case KernelParam::Kind::kTmaA:
        case KernelParam::Kind::kTmaB:
          break;
        case KernelParam::Kind::kInput:
          params += ",\n    const " + element_type(p.tensor.dtype()) + "* __restrict__ in_" + p.tensor.name();
          break;
        case KernelParam::Kind::kOutput:
          params += ",\n    " + element_type(p.tensor.dtype()) + "* __restrict__ out_" + p.tensor.name();
          break;
        case KernelParam::Kind::kStash:
          params += ",\n    float* __restrict__ stash";
          break;
      }
    }
    out.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s_.threads()) + ", 1)");
    out.open(result.name + "(" + params + ")");
    out.line("extern __shared__ unsigned char smem_raw[];");
    out.line("// 128-byte swizzled operand tiles need 1024-byte alignment.");
    out.line("unsigned char* smem = (unsigned char*)(((u64)smem_raw + 1023) & ~(u64)1023);");
    out.line("u16* sA = (u16*)smem;                       // [STAGES][BM][64]");
    out.line("u16* sB = sA + STAGES * BM * BK;            // [STAGES][BN][64]");
    out.line("u64* full = (u64*)(sB + STAGES * BN * BK);  // TMA data landed in stage s");
    out.line("u64* empty = full + STAGES;                 // consumers released stage s");
    out.line("u64* xbar = empty + STAGES;                 // cluster exchange rounds, double-buffered");
    out.line("u64* order = xbar + 2;                      // ping-pong: the mainloop of tile t finished");
    out.line(
        "float* xch = (float*)(order + 2);           // [2][CLUSTER_N][XSLOTS][BM] row partials from each "
        "peer");
    out.line(
        "float* wgx = xch + (CLUSTER_N > 1 ? 2 * CLUSTER_N * XSLOTS * BM : 0);  // [2][2][XSLOTS][BM] from "
        "each ping-pong warpgroup");
    out.line("(void)xbar; (void)xch; (void)order; (void)wgx;");
    out.line("const int warpgroup = threadIdx.x / 128;");
    const std::string empty_count = s_.warp_roles == WarpRoles::kPingPong ? "1" : "CONSUMERS";
    out.open("if (threadIdx.x == 0)");
    out.open("for (int s = 0; s < STAGES; ++s)");
    out.line("mbar_init(&full[s], 1);");
    out.line("mbar_init(&empty[s], " + empty_count + ");");
    out.close();
    // Row partials go to the cluster's peers from the lanes that lead each row's quad: of every consumer
    // warpgroup when they own different rows, of the first alone in ping-pong (both own the same rows).
    const std::string writers = s_.warp_roles == WarpRoles::kPingPong ? "32" : "32 * CONSUMERS";
    out.line("mbar_init(&xbar[0], CLUSTER_N * " + writers + ");");
    out.line("mbar_init(&xbar[1], CLUSTER_N * " + writers + ");");
    out.line("mbar_init(order, 1);");
    out.line("fence_mbar_init();");
    out.close();
    out.line(result.launch.cluster_x > 1 ? "cluster_sync();" : "__syncthreads();");
    out.line("const u32 cta_rank = " + std::string(result.launch.cluster_x > 1 ? "cluster_rank();" : "0;"));
    out.line("const TileSequence tiles = cta_tiles(cta_rank);");
    out.line();
    producer(out);
    out.line();
    consumer(out, epilogue);
    out.close();
  }

  void producer(CodeStream& out) const {
    out.open("if (warpgroup == 0)");
    out.line(
        "// Producer warpgroup: one thread streams A and B tiles through the shared-memory ring with TMA.");
    out.line("regs_decrease<" + std::to_string(kProducerRegisters) + ">();");
    out.open("if (threadIdx.x == 0)");
    out.line("tma_prefetch_descriptor(&tma_a);");
    out.line("tma_prefetch_descriptor(&tma_b);");
    out.open("for (int t = 0; t < tiles.count; ++t)");
    out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
    out.line("const int it = t * K_BLOCKS + kb;");
    out.line("const int s = it % STAGES;");
    out.line("mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);");
    out.line("mbar_expect_tx(&full[s], STAGE_BYTES);");
    out.line("tma_load_2d(sA + s * BM * BK, &tma_a, &full[s], kb * BK, tiles.m_block * BM);");
    out.line("tma_load_2d(sB + s * BN * BK, &tma_b, &full[s], kb * BK, tiles.n_tile(t) * BN);");
    out.close();
    out.close();
    out.close();
    out.line("return;");
    out.close();
  }

  void mainloop(CodeStream& out) const {
    const bool ping_pong = s_.warp_roles == WarpRoles::kPingPong;
    if (ping_pong) {
      out.line(
          "// Ping-pong: start after the other warpgroup's mainloop of tile t-1, so that this one runs while "
          "that one");
      out.line("// is in its epilogue, and so that every ring barrier waited on is at most one phase ahead.");
      out.line("if (t > 0) mbar_wait(order, (t - 1) & 1);");
    }
    out.line(
        "// Mainloop: wgmma over the K blocks, one group in flight, each stage released once its group "
        "retires.");
    out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
    out.line("const int it = t * K_BLOCKS + kb;");
    out.line("const int s = it % STAGES;");
    out.line("mbar_wait(&full[s], (it / STAGES) & 1);");
    out.line("wgmma_fence();");
    out.line("#pragma unroll");
    out.open("for (int kk = 0; kk < BK / 16; ++kk)");
    out.line("const u64 desc_a = smem_descriptor_sw128(sA + s * BM * BK + a_row0 * BK + kk * 16);");
    out.line("const u64 desc_b = smem_descriptor_sw128(sB + s * BN * BK + kk * 16);");
    out.line("wgmma_step(acc, desc_a, desc_b, (kb > 0 || kk > 0) ? 1 : 0);");
    out.close();
    out.line("wgmma_commit();");
    out.line("wgmma_wait<1>();");
    out.line("if (kb > 0 && (threadIdx.x & 127) == 0) mbar_arrive(&empty[(it - 1) % STAGES]);");
    out.close();
    out.line("wgmma_wait<0>();");
    out.line("if ((threadIdx.x & 127) == 0) mbar_arrive(&empty[(t * K_BLOCKS + K_BLOCKS - 1) % STAGES]);");
    if (ping_pong) out.line("if ((threadIdx.x & 127) == 0) mbar_arrive(order);");
  }

  void consumer(CodeStream& out, const EpilogueEmitter& epilogue) const {
    out.line(
        "// Consumer warpgroups: tensor-core mainloop, then the Stage-Stream epilogue on the fragments.");
    out.line("regs_increase<" + std::to_string(kConsumerRegisters) + ">();");
    out.line("const int consumer = warpgroup - 1;");
    out.line("const int lane = threadIdx.x & 31;");
    out.line("const int warp = (threadIdx.x / 32) & 3;");
    const bool ping_pong = s_.warp_roles == WarpRoles::kPingPong;
    out.line(std::string("const int a_row0 = ") + (ping_pong ? "0" : "consumer * 64") +
             ";  // first A row of this warpgroup");
    out.line(
        "const int local_row0 = a_row0 + warp * 16 + lane / 4;  // this thread's rows: local_row0 and "
        "local_row0 + 8");
    out.line("const int m0 = tiles.m_block * BM;");
    out.line("int xround = 0, wround = 0;  // cluster exchanges and warpgroup combines so far");
    out.line("(void)xround; (void)wround;");
    out.line(std::string("const bool row_writer = (lane & 3) == 0 && cta_rank == 0") +
             (ping_pong ? " && consumer == 0;" : ";") + "  // writes row-value outputs");
    out.line("(void)row_writer;");
    out.line("float acc[BN / 2];");
    epilogue.declare_state(out);
    out.line();
    epilogue.begin_stage(out, 0);
    out.open("for (int t = 0; t < tiles.count; ++t)");
    if (ping_pong) out.line("if ((t & 1) != consumer) continue;  // ping-pong: alternate tiles");
    out.line("const int n0 = tiles.n_tile(t) * BN;");
    mainloop(out);
    epilogue.element_loop(out, 0);
    out.close();
    epilogue.end_stage(out, 0);
    for (int stage = 1; stage < static_cast<int>(plan_.stages.size()); ++stage) {
      out.line();
      epilogue.begin_stage(out, stage);
      if (s_.carried == ValueHome::kRegisters) {
        const std::string mine = ping_pong ? "consumer" : "0";
        out.line("// Carried tiles are still in registers: this warpgroup's only column tile.");
        out.open("if (tiles.count > " + mine + ")");
        out.line("const int n0 = tiles.n_tile(" + mine + ") * BN;");
      } else {
        out.line("// Carried tiles come back from the stash, each element read by the thread that wrote it.");
        out.open("for (int t = 0; t < tiles.count; ++t)");
        if (ping_pong) out.line("if ((t & 1) != consumer) continue;");
        out.line("const int n0 = tiles.n_tile(t) * BN;");
      }
      epilogue.element_loop(out, stage);
      out.close();
      epilogue.end_stage(out, stage);
    }
  }

  const FusionPlan& plan_;
  const Schedule& s_;
  const std::string& key_;
  int xslots_ = 1;
};

}  // namespace

KernelSource emit_kernel(const FusionPlan& plan, const Schedule& schedule, const std::string& workload_key) {
  schedule::check_legal(plan, schedule);
  return KernelEmitter(plan, schedule, workload_key).emit();
}

}  // namespace comfuse::codegen
