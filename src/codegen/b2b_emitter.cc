// Emission of the fused back-to-back kernel.
#include "codegen/b2b_emitter.h"

#include <set>

#include "codegen/b2b_device_functions.h"
#include "codegen/b2b_walk.h"
#include "codegen/code_stream.h"
#include "codegen/device_prelude.h"
#include "codegen/expr_emitter.h"
#include "schedule/b2b_mask.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using schedule::OnlineStatistic;

constexpr int kConsumerRegisters = 232;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

std::int64_t product(const std::vector<std::int64_t>& extents) {
  std::int64_t p = 1;
  for (std::int64_t e : extents) p *= e;
  return p;
}

std::string store_value(te::DType dtype, const std::string& value) {
  if (dtype == te::DType::bf16) return "f32_to_bf16(" + value + ")";
  if (dtype == te::DType::f16) return "f32_to_f16(" + value + ")";
  return value;
}

// The running max of an online softmax (check_b2b_supported allows one), or nullptr.
const OnlineStatistic* first_running_max(const schedule::B2BPlan& plan) {
  const std::vector<const OnlineStatistic*> maxima = plan.running_maxima();
  return maxima.empty() ? nullptr : maxima.front();
}

// The registers and buffers of one chunk in flight: GEMM1's accumulator, and GEMM2's operand as a register
// array (operand in registers) or as one of the shared operand buffers (operand in shared memory). Overlapped
// chunks alternate between two sets.
struct ChunkBuffers {
  std::string acc1;    // f32 [BN1 / 2]
  std::string hfrag;   // u32 [BN1 / 16][4]
  int operand_buffer;  // 0 or 1
};
const ChunkBuffers kOneChunk{"acc1", "hfrag", 0};
const ChunkBuffers kChunkA{"acc1_a", "hfrag_a", 0}, kChunkB{"acc1_b", "hfrag_b", 1};

class B2BEmitter {
 public:
  B2BEmitter(const schedule::B2BPlan& plan, const B2BSchedule& schedule, const std::string& key)
      : plan_(plan),
        s_(schedule),
        key_(key),
        batched_(!plan.first.batch.empty()),
        consumers_(schedule.bm / 64),
        walk_(plan, schedule),
        max_(first_running_max(plan)) {
    // The tiles the kernel computes: GEMM2's operand, the statistics' sources, and what they read. (Tiles
    // such as the normalised softmax are replaced by the numerator and the final row factor.)
    std::set<const te::TensorNode*> needed = {plan_.numerator->get()};
    for (const OnlineStatistic& s : plan_.statistics) needed.insert(s.source.get());
    for (auto t = plan_.tiles.rbegin(); t != plan_.tiles.rend(); ++t) {
      if (needed.count(t->get()) == 0) continue;
      for (const te::Tensor& read : te::Program::reads_of(*t)) needed.insert(read.get());
    }
    // Tiles that read a statistic (or such a tile) wait for the block's running max: the second pass.
    std::set<const te::TensorNode*> late;
    for (const OnlineStatistic& s : plan_.statistics) late.insert(s.tensor.get());
    for (const te::Tensor& t : plan_.tiles) {
      if (needed.count(t.get()) == 0) continue;
      bool reads_late = false;
      for (const te::Tensor& read : te::Program::reads_of(t))
        reads_late = reads_late || late.count(read.get()) > 0;
      (reads_late ? second_pass_ : first_pass_).push_back(t);
      if (reads_late) late.insert(t.get());
    }
  }

  KernelSource emit() {
    const auto& first = plan_.first;
    const auto& second = plan_.second;
    KernelSource result;
    result.name = "comfuse_b2b_" + second.tensor.name() + "_" + key_.substr(key_.find(':') + 1, 12);
    result.params.push_back({KernelParam::Kind::kTmaA, first.a, s_.bm});
    result.params.push_back({KernelParam::Kind::kTmaB, first.b, s_.bn1});
    // W2 in boxes of 64 columns: [O rows] of a K-major W2, [64 rows of the chained axis] of an N-major one.
    result.params.push_back(
        {KernelParam::Kind::kTmaB, second.b, second.b_k_major ? static_cast<int>(second.n) : 64});
    for (const te::Tensor& output : plan_.program.outputs()) {
      // The TMA store writes the one output through its map, in boxes of 64 rows (check_legal).
      result.params.push_back(s_.tma_store ? KernelParam{KernelParam::Kind::kTmaOut, output, 64}
                                           : KernelParam{KernelParam::Kind::kOutput, output, 0});
    }
    result.launch.grid_x = static_cast<int>(product(first.batch) * ceil_div(first.m, s_.bm));
    result.launch.block_x = threads();
    result.launch.cluster_x = 1;
    result.launch.shared_bytes = static_cast<int>(schedule::b2b_shared_bytes(plan_, s_));
    if (s_.persistent) {
      // grid_x counts row blocks; the CTAs that fit an SM at once (two at bm=64 when shared memory allows)
      // stay and stride over them.
      result.launch.persistent = true;
      const schedule::TargetLimits limits;
      const bool two =
          consumers_ == 1 && 2 * (result.launch.shared_bytes + limits.shared_memory_reserved_per_block) <=
                                 limits.shared_memory_per_multiprocessor;
      result.launch.ctas_per_multiprocessor = two ? 2 : 1;
    }

    CodeStream out;
    out.line("// Generated by comfuse. Do not edit: regenerate from the workload and the schedule.");
    out.line("// workload: " + key_);
    out.line("// fused back-to-back kernel, " + schedule::to_string(s_) +
             (s_.overlap ? " (GEMMs overlapped with the tiles between)" : ""));
    out.line();
    out.raw(device_prelude());
    out.line();
    out.line("constexpr int BATCH = " + std::to_string(product(first.batch)) +
             ", M = " + std::to_string(first.m) + ", K = " + std::to_string(first.k) +
             ", N = " + std::to_string(first.n) + ", O = " + std::to_string(second.n) + ";");
    out.line("constexpr int BM = " + std::to_string(s_.bm) + ", BN1 = " + std::to_string(s_.bn1) +
             ", BK = 64, STAGES = " + std::to_string(s_.stages) +
             ", CONSUMERS = " + std::to_string(consumers_) + ";");
    out.line("constexpr int K_BLOCKS = " + std::to_string(ceil_div(first.k, 64)) +
             ", CHUNKS = " + std::to_string(ceil_div(first.n, s_.bn1)) +
             ", M_BLOCKS = " + std::to_string(ceil_div(first.m, s_.bm)) + ";");
    if (s_.persistent) {
      out.line("// Row blocks of all batches, which the resident CTAs walk in turn.");
      out.line("constexpr int BLOCKS = BATCH * M_BLOCKS;");
    }
    out.line("// Every chunk lies wholly within N: the column checks fold away at compile time.");
    out.line("constexpr bool FULL_CHUNKS = N % BN1 == 0;");
    out.line("__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }");
    define_approximate_math(
        out, "2^x on the special-function unit (the tiles' approximate exp, see the tiles between).",
        tiles_use(te::UnaryOp::kTanh)
            ? std::optional<std::string>("tanh on the special-function unit (the tiles' approximate tanh).")
            : std::nullopt);
    out.line(
        "constexpr u32 X_BYTES = K_BLOCKS * BM * BK * 2, W1_BYTES = BN1 * BK * 2, W2_BYTES = O * BN1 * 2;");
    out.line("static_assert(K_BLOCKS * BK >= K && CHUNKS * BN1 >= N && M > 0, \"tiles cover the problem\");");
    out.line();
    emit_b2b_device_functions(out, {first.a.dtype(), s_.bn1, static_cast<int>(second.n), !second.b_k_major,
                                    s_.operand_in_shared, s_.pingpong, s_.tma_store});
    out.line();
    kernel(out, result);
    result.source = out.str();
    return result;
  }

 private:
  void kernel(CodeStream& out, const KernelSource& result) const {
    std::string params =
        "const __grid_constant__ TmaDescriptor tma_x, const __grid_constant__ TmaDescriptor "
        "tma_w1, const __grid_constant__ TmaDescriptor tma_w2";
    for (const te::Tensor& output : plan_.program.outputs()) {
      params += s_.tma_store
                    ? ", const __grid_constant__ TmaDescriptor tma_out"
                    : ",\n    " + memory_element_type(output.dtype()) + "* __restrict__ out_" + output.name();
    }
    // One consumer warpgroup: two CTAs may share an SM (128 registers a thread at launch, rebalanced 24/232).
    out.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads()) + ", " +
             (consumers_ == 1 ? "2" : "1") + ")");
    out.open(result.name + "(" + params + ")");
    out.line("extern __shared__ unsigned char smem_raw[];");
    out.line("unsigned char* smem = (unsigned char*)(((u64)smem_raw + 1023) & ~(u64)1023);");
    if (s_.persistent) {
      out.line(
          "u16* sx_buf = (u16*)smem;                    // [2][K_BLOCKS][BM][64]: X's rows of two blocks");
      out.line(
          "u16* ring = sx_buf + 2 * K_BLOCKS * BM * BK; // [STAGES][BN1][64]: W1's rows of a chunk, by K "
          "block");
    } else {
      out.line(
          "u16* sx = (u16*)smem;                        // [K_BLOCKS][BM][64]: the CTA's rows of X, loaded "
          "once");
      out.line(
          "u16* ring = sx + K_BLOCKS * BM * BK;         // [STAGES][BN1][64]: W1's rows of a chunk, by K "
          "block");
    }
    out.line(
        "u16* sw2 = ring + STAGES * BN1 * BK;         // [2][BN1 / 64][O x 64]: W2's part for one chunk");
    if (s_.operand_in_shared) {
      out.line("u16* sop = sw2 + 2 * O * BN1;  // [" + std::string(s_.overlap ? "2" : "1") +
               "][BN1 / 64][BM][64]: GEMM2's operand, laid out like X");
      out.line("u64* full_a = (u64*)(sop + " + std::string(s_.overlap ? "2 * " : "") + "BN1 * BM);");
    } else {
      out.line("u64* full_a = (u64*)(sw2 + 2 * O * BN1);");
    }
    out.line("u64* empty_a = full_a + STAGES;");
    out.line("u64* full_b = empty_a + STAGES;");
    out.line("u64* empty_b = full_b + 2;");
    if (s_.persistent) {
      out.line("u64* full_x = empty_b + 2;  // [2]: X's two buffers");
      out.line("u64* empty_x = full_x + 2;");
    } else {
      out.line("u64* full_x = empty_b + 2;");
    }
    out.line("const int warpgroup = threadIdx.x / 128;");
    if (!s_.persistent) walk_.block_mapping(out, "blockIdx.x");
    out.open("if (threadIdx.x == 0)");
    out.open("for (int s = 0; s < STAGES; ++s)");
    out.line("mbar_init(&full_a[s], 1);");
    out.line("mbar_init(&empty_a[s], CONSUMERS);");
    out.close();
    out.open("for (int s = 0; s < 2; ++s)");
    out.line("mbar_init(&full_b[s], 1);");
    out.line("mbar_init(&empty_b[s], CONSUMERS);");
    out.close();
    if (s_.persistent) {
      out.open("for (int s = 0; s < 2; ++s)");
      out.line("mbar_init(&full_x[s], 1);");
      out.line("mbar_init(&empty_x[s], CONSUMERS);");
      out.close();
    } else {
      out.line("mbar_init(full_x, 1);");
    }
    out.line("fence_mbar_init();");
    out.close();
    out.line("__syncthreads();");
    if (!s_.persistent) out.line("(void)batch;");
    out.line();
    walk_.producer(out, producer_registers());
    out.line();
    consumer(out);
    out.close();
  }

  // Whether a tile the kernel computes applies `op`.
  bool tiles_use(te::UnaryOp op) const {
    const auto applies = [op](const te::Expr& e) {
      return e.kind() == te::ExprKind::kUnary && e.as<te::UnaryNode>()->op == op;
    };
    for (const auto* pass : {&first_pass_, &second_pass_}) {
      for (const te::Tensor& t : *pass) {
        if (te::any_subexpr(t->body, applies)) return true;
      }
    }
    return false;
  }

  // Binds a tensor's iteration axes: [batch, row, column] or [row, column] (or [batch, row] / [row] for row
  // values) to the kernel's indices.
  void bind_axes(const te::Tensor& t, bool has_column, ExprBindings& bindings) const {
    const std::size_t rank = t->axes.size();
    std::size_t next = 0;
    if (batched_) bindings.vars[t->axes[next++].get()] = "batch";
    bindings.vars[t->axes[next++].get()] = "grow";
    if (has_column) bindings.vars[t->axes[next++].get()] = "gcol";
    COMFUSE_CHECK(next == rank, "back-to-back tensor '" + t.name() + "' has the expected rank");
  }

  void consumer(CodeStream& out) const {
    out.line(
        "// Consumers: each warpgroup owns 64 rows. Per chunk: GEMM1 into acc1; the tiles between on the");
    out.line(
        "// fragment (with the running max and sums of an online softmax where the program reduces over the");
    out.line(
        "// chained axis), packed in registers as GEMM2's A operand; GEMM2 into acc2, rescaled when the max");
    out.line("// grows. acc2 takes its final row factor and epilogue at the end and is stored.");
    out.line("regs_increase<" + std::to_string(kConsumerRegisters) + ">();");
    out.line("const int consumer = warpgroup - 1;");
    out.line("const int lane = threadIdx.x & 31;");
    out.line("const int warp = (threadIdx.x / 32) & 3;");
    out.line("const int a_row0 = consumer * 64;");
    out.line("const int local_row0 = a_row0 + warp * 16 + lane / 4;  // this thread's rows: +0 and +8");
    if (s_.persistent) {
      // The turns run on across blocks: consumer 1 gives the first one once.
      if (s_.pingpong) out.line("if (consumer == 1) turn_pass(0);");
      walk_.open_block_loop(out);
    }
    out.line("float acc2[O / 2];");
    if (max_ != nullptr) {
      out.line("float run_max[2] = {neg_inf(), neg_inf()};  // '" + max_->tensor.name() +
               "' over the chunks so far");
      out.line("float safe_max[2] = {0.0f, 0.0f};          // the same, 0 while a row has seen only -inf");
    }
    for (const OnlineStatistic& s : plan_.statistics) {
      if (s.kind == OnlineStatistic::Kind::kRunningMax) continue;
      out.line("float sum_" + s.tensor.name() + "[2] = {0.0f, 0.0f};  // this thread's columns of '" +
               s.tensor.name() + "'");
    }
    if (max_ != nullptr)
      out.line("float scale[2] = {0.0f, 0.0f};  // exp(old max - new max) of the last chunk's rows");
    out.line(s_.persistent ? "mbar_wait(&full_x[round & 1], (round >> 1) & 1);" : "mbar_wait(full_x, 0);");
    if (s_.overlap) {
      overlapped_chunks(out);
    } else if (s_.pingpong) {
      pingpong_chunks(out);
    } else {
      out.open("for (int c = 0; c < chunks; ++c)");
      out.line("float acc1[BN1 / 2];");
      if (!s_.operand_in_shared) out.line("u32 hfrag[BN1 / 16][4];");
      gemm1_then_tiles(out, kOneChunk, "c");
      gemm2_alone(out, kOneChunk, "c");
      out.close();
    }
    if (s_.persistent && !s_.tma_store) {
      out.line(
          "// Every GEMM1 of the block is done: X's buffer goes back to the producer for the block after "
          "next.");
      out.line("if ((threadIdx.x & 127) == 0) mbar_arrive(&empty_x[round & 1]);");
    }
    finish(out);
    if (s_.persistent) {
      out.line("q += chunks;");
      out.close();
    }
  }

  // The chunk loop of two warpgroups taking turns on the tensor cores. A turn issues GEMM2 of the previous
  // chunk and GEMM1 of this one, then passes the turn on and waits for them; its tiles between then run while
  // the other warpgroup's GEMMs do. Consumer 1 gives consumer 0 the first turn; each turn_wait(me) completes
  // when my 128 threads and the other's 128 pass. The last turn of consumer 1 passes nothing: no one waits.
  void pingpong_chunks(CodeStream& out) const {
    out.line("float acc1[BN1 / 2];");
    if (!s_.operand_in_shared) out.line("u32 hfrag[BN1 / 16][4];");
    if (!s_.persistent) out.line("if (consumer == 1) turn_pass(0);");
    out.open("");
    out.line("const int c = 0;");
    out.line("turn_wait(consumer);");
    issue_gemm1(out, "acc1", "c");
    out.line("turn_pass(consumer ^ 1);");
    out.line("wgmma_wait<0>();");
    release_gemm1(out, "c");
    tiles_between(out, kOneChunk, "c");
    out.close();
    out.open("for (int c = 1; c < chunks; ++c)");
    out.line("turn_wait(consumer);");
    rescale_acc2(out, "c - 1");
    issue_gemm2(out, kOneChunk, "c - 1");
    issue_gemm1(out, "acc1", "c");
    out.line("turn_pass(consumer ^ 1);");
    out.line("wgmma_wait<0>();");
    release_gemm2(out, "c - 1");
    release_gemm1(out, "c");
    tiles_between(out, kOneChunk, "c");
    out.close();
    out.open("");
    out.line("const int c = chunks;");
    out.line("turn_wait(consumer);");
    rescale_acc2(out, "c - 1");
    issue_gemm2(out, kOneChunk, "c - 1");
    if (s_.persistent) {
      // Consumer 1's last turn of a block hands the next block's first turn to consumer 0, whose GEMMs then
      // run under consumer 1's epilogue; after the CTA's last block nobody waits for it.
      out.line("if (consumer == 0 || block + (int)gridDim.x < BLOCKS) turn_pass(consumer ^ 1);");
    } else {
      out.line("if (consumer == 0) turn_pass(1);");
    }
    out.line("wgmma_wait<0>();");
    release_gemm2(out, "c - 1");
    out.close();
  }

  // The chunk loop with GEMM1 of chunk c+1 and GEMM2 of chunk c in flight while the tiles between of chunk
  // c+1 run: acc1 and the packed operand are double-buffered (a, b); the loop takes two chunks per turn so
  // that every buffer is a fixed set of registers, and the last chunk or two are peeled off so that no step's
  // issue and wait depend on a condition (ptxas then keeps the wgmma groups in flight).
  void overlapped_chunks(CodeStream& out) const {
    out.line("float acc1_a[BN1 / 2], acc1_b[BN1 / 2];");
    if (!s_.operand_in_shared) out.line("u32 hfrag_a[BN1 / 16][4], hfrag_b[BN1 / 16][4];");
    out.line("// Chunk 0's GEMM1 and tiles between before the loop.");
    out.open("");
    out.line("const int c = 0;");
    gemm1_then_tiles(out, kChunkA, "c");
    out.close();
    out.line("int pair = 0;");
    out.open("for (; pair + 2 < chunks; pair += 2)");
    overlapped_step(out, "pair", kChunkA, kChunkB);
    overlapped_step(out, "pair + 1", kChunkB, kChunkA);
    out.close();
    out.line("// One or two chunks are left; the last has no next chunk.");
    out.open("if (pair + 1 < chunks)");
    overlapped_step(out, "pair", kChunkA, kChunkB);
    last_step(out, "pair + 1", kChunkB);
    out.close();
    out.open("else");
    last_step(out, "pair", kChunkA);
    out.close();
  }

  // Chunk `chunk`, whose operand is in `cur`: GEMM1 of the next chunk into `next`, GEMM2 of this one, then
  // the next chunk's tiles between while GEMM2 runs.
  void overlapped_step(CodeStream& out, const std::string& chunk, const ChunkBuffers& cur,
                       const ChunkBuffers& next) const {
    out.open("");
    out.line("const int c = " + chunk + ", cn = c + 1;");
    rescale_acc2(out, "c");  // nothing in flight yet
    issue_gemm1(out, next.acc1, "cn");
    issue_gemm2(out, cur, "c");
    out.line("wgmma_wait<1>();  // the next chunk's GEMM1; this chunk's GEMM2 may still run");
    release_gemm1(out, "cn");
    out.open("");
    out.line("const int c = cn;");
    tiles_between(out, next, "c");
    out.close();
    out.line("wgmma_wait<0>();");
    release_gemm2(out, "c");
    out.close();
  }

  // The last chunk: its GEMM2 alone.
  void last_step(CodeStream& out, const std::string& chunk, const ChunkBuffers& cur) const {
    out.open("");
    out.line("const int c = " + chunk + ";");
    gemm2_alone(out, cur, "c");
    out.close();
  }

  // GEMM1 of `chunk` into `buffers`, waited for, its ring stages released, then the tiles between into its
  // operand.
  void gemm1_then_tiles(CodeStream& out, const ChunkBuffers& buffers, const std::string& chunk) const {
    issue_gemm1(out, buffers.acc1, chunk);
    out.line("wgmma_wait<0>();");
    release_gemm1(out, chunk);
    tiles_between(out, buffers, chunk);
  }

  // GEMM2 of `chunk` with nothing else in flight: the accumulator rescaled first (online statistics), the
  // group waited for and W2's buffer released.
  void gemm2_alone(CodeStream& out, const ChunkBuffers& buffers, const std::string& chunk) const {
    rescale_acc2(out, chunk);
    issue_gemm2(out, buffers, chunk);
    out.line("wgmma_wait<0>();");
    release_gemm2(out, chunk);
  }

  // GEMM1 of chunk `chunk` into `acc` over the K blocks, one commit group; the caller waits for it.
  void issue_gemm1(CodeStream& out, const std::string& acc, const std::string& chunk) const {
    out.line("wgmma_fence();");
    out.line("#pragma unroll");
    out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
    out.line("const int it = " + walk_.walked(chunk) + " * K_BLOCKS + kb;");
    out.line("const int s = it % STAGES;");
    out.line("mbar_wait(&full_a[s], (it / STAGES) & 1);");
    out.line("#pragma unroll");
    out.open("for (int kk = 0; kk < BK / 16; ++kk)");
    out.line("const u64 desc_a = smem_descriptor_sw128(sx + kb * BM * BK + a_row0 * BK + kk * 16);");
    out.line("const u64 desc_b = smem_descriptor_sw128(ring + s * BN1 * BK + kk * 16);");
    out.line("wgmma_first(" + acc + ", desc_a, desc_b, (kb > 0 || kk > 0) ? 1 : 0);");
    out.close();
    out.close();
    out.line("wgmma_commit();");
  }

  // After GEMM1 of `chunk` completed: its ring stages go back to the producer.
  void release_gemm1(CodeStream& out, const std::string& chunk) const {
    out.open("if ((threadIdx.x & 127) == 0)");
    out.line("for (int kb = 0; kb < K_BLOCKS; ++kb) mbar_arrive(&empty_a[(" + walk_.walked(chunk) +
             " * K_BLOCKS + kb) % STAGES]);");
    out.close();
  }

  void element_header(CodeStream& out, const std::string& chunk) const {
    out.line("#pragma unroll");
    out.open("for (int i = 0; i < BN1 / 2; ++i)");
    out.line("const int h = (i >> 1) & 1;");
    out.line("const int grow = m0 + local_row0 + 8 * h;");
    out.line("const int gcol = " + chunk + " * BN1 + (i >> 2) * 8 + (lane & 3) * 2 + (i & 1);");
    out.line(
        "const bool valid = FULL_CHUNKS || gcol < N;  // columns past N (or a batch's rows) take no part");
    out.line("(void)grow;");
  }

  // The tiles between the GEMMs on GEMM1's accumulator in `buffers` (chunk `chunk`), in two passes over the
  // fragment when a running max splits them, packed into the operand of `buffers` for GEMM2. Updates the
  // running max, `scale` and the sums.
  void tiles_between(CodeStream& out, const ChunkBuffers& buffers, const std::string& chunk) const {
    const auto& first = plan_.first;
    const std::string& hfrag = buffers.hfrag;
    ExprBindings bindings;
    bindings.reads[first.tensor.get()] = buffers.acc1 + "[i]";
    // The tiles feed GEMM2's 16-bit operand (and the f32 sums, where a few ulp are far below its rounding).
    bindings.approximate_math = true;
    for (const te::Tensor& t : first_pass_) out.line("float a_" + t.name() + "[BN1 / 2];");
    if (max_ != nullptr) out.line("float block_max[2] = {neg_inf(), neg_inf()};");
    out.line("// Tiles that need no statistic" +
             std::string(max_ ? ", and the block's maximum of '" + max_->source.name() + "'." : "."));
    element_header(out, chunk);
    // A tile that is a positive constant times a value keeps the value: the block max and exp(x - max)
    // take the constant once (a row, or in the FFMA before ex2), not once an element.
    for (const te::Tensor& t : first_pass_) {
      ExprBindings here = bindings;
      bind_axes(t, true, here);
      const std::string element = "a_" + t.name() + "[i]";
      if (const auto scaled = emit_scaled(t->body, here)) {
        out.line(element + " = " + scaled->base + ";  // times " + float_literal(scaled->factor));
        bindings.reads[t.get()] = "(" + element + " * " + float_literal(scaled->factor) + ")";
        bindings.scaled_reads[t.get()] = ScaledValue{element, scaled->factor};
      } else {
        out.line(element + " = " + emit_expr(t->body, here) + ";");
        bindings.reads[t.get()] = element;
      }
    }
    const auto max_scaled =
        max_ == nullptr ? bindings.scaled_reads.end() : bindings.scaled_reads.find(max_->source.get());
    const bool max_of_scaled = max_scaled != bindings.scaled_reads.end();
    if (max_ != nullptr) {
      const std::string value = max_of_scaled ? max_scaled->second.base : read_of(max_->source, bindings);
      out.line("if (valid) block_max[h] = fmaxf(block_max[h], " + value + ");");
    }
    out.close();
    if (max_ != nullptr) {
      out.line(
          "// The running max over the chunks; rows whose max grew rescale their sums and acc2 by scale.");
      out.open("for (int h = 0; h < 2; ++h)");
      out.line("float m = block_max[h];");
      out.line("m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));");
      out.line("m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));");
      if (max_of_scaled) {
        out.line("m *= " + float_literal(max_scaled->second.factor) +
                 ";  // the max of the scaled values (rounding keeps order)");
      }
      out.line("const float next = fmaxf(run_max[h], m);");
      out.line("scale[h] = run_max[h] == neg_inf() ? 0.0f : __expf(run_max[h] - next);");
      out.line("run_max[h] = next;");
      out.line("safe_max[h] = next == neg_inf() ? 0.0f : next;");
      for (const OnlineStatistic& s : plan_.statistics) {
        if (s.kind == OnlineStatistic::Kind::kRescaledSum)
          out.line("sum_" + s.tensor.name() + "[h] *= scale[h];");
      }
      out.close();
      bindings.reads[max_->tensor.get()] = "safe_max[h]";
    }
    out.line("// Tiles after the statistics, the sums' parts, and GEMM2's operand (0 past N).");
    out.line("float hval[BN1 / 2];");
    element_header(out, chunk);
    for (const te::Tensor& t : second_pass_) {
      ExprBindings here = bindings;
      bind_axes(t, true, here);
      out.line("const float v_" + t.name() + " = " + emit_expr(t->body, here) + ";");
      bindings.reads[t.get()] = "v_" + t.name();
    }
    for (const OnlineStatistic& s : plan_.statistics) {
      if (s.kind == OnlineStatistic::Kind::kRunningMax) continue;
      out.line("if (valid) sum_" + s.tensor.name() + "[h] += " + read_of(s.source, bindings) + ";");
    }
    out.line("hval[i] = valid ? " + read_of(*plan_.numerator, bindings) + " : 0.0f;");
    out.close();
    out.line("// The accumulator layout of columns 16s..16s+15 is the A fragment of GEMM2's k16 step s.");
    out.line("#pragma unroll");
    out.open("for (int s = 0; s < BN1 / 16; ++s)");
    if (s_.operand_in_shared) {
      store_operand(out, buffers.operand_buffer);
      return;
    }
    out.line(hfrag + "[s][0] = pack_pair(hval[8 * s + 0], hval[8 * s + 1]);");
    out.line(hfrag + "[s][1] = pack_pair(hval[8 * s + 2], hval[8 * s + 3]);");
    out.line(hfrag + "[s][2] = pack_pair(hval[8 * s + 4], hval[8 * s + 5]);");
    out.line(hfrag + "[s][3] = pack_pair(hval[8 * s + 6], hval[8 * s + 7]);");
    out.close();
  }

  // Inside the k16-step loop of tiles_between: the four packed pairs of step s into the operand buffer, at
  // the places of the register fragment (rows r and r + 8, columns 16s + 2(lane % 4) and + 8) in X's swizzled
  // layout: a 128-byte row of 64 columns, its 16-byte pieces XORed with row % 8 (no bank conflicts).
  void store_operand(CodeStream& out, int buffer) const {
    out.line("u16* box = sop + " + std::to_string(buffer) + " * BN1 * BM + (s / 4) * BM * 64;");
    out.line("#pragma unroll");
    out.open("for (int p = 0; p < 4; ++p)");
    out.line("const int row = local_row0 + 8 * (p & 1), col = (s % 4) * 16 + 8 * (p >> 1) + 2 * (lane & 3);");
    out.line("const int piece = (col / 8) ^ (row % 8);");
    out.line(
        "*(u32*)(box + row * 64 + piece * 8 + col % 8) = pack_pair(hval[8 * s + 2 * p], hval[8 * s + 2 * p + "
        "1]);");
    out.close();
    out.close();
    out.line("shared_ready(consumer);");
  }

  std::string read_of(const te::Tensor& t, const ExprBindings& bindings) const {
    const auto it = bindings.reads.find(t.get());
    COMFUSE_CHECK(it != bindings.reads.end(), "tile '" + t.name() + "' is computed before it is read");
    return it->second;
  }

  // GEMM2 of chunk `chunk` from the operand of `buffers` (the caller has rescaled the accumulator: no GEMM2
  // may be in flight then); one commit group, which the caller waits for.
  void issue_gemm2(CodeStream& out, const ChunkBuffers& buffers, const std::string& chunk) const {
    const bool k_major = plan_.second.b_k_major;
    out.line("mbar_wait(&full_b[(" + walk_.walked(chunk) + ") & 1], ((" + walk_.walked(chunk) +
             ") >> 1) & 1);");
    out.line("wgmma_fence();");
    out.line("#pragma unroll");
    out.open("for (int s = 0; s < BN1 / 16; ++s)");
    // k16 step s reads box s / 4 of the chunk's W2 buffer, at its 16-element step s % 4.
    const std::string box = "sw2 + (((" + walk_.walked(chunk) + ") & 1) * BN1 / 64 + s / 4) * O * 64";
    if (k_major) {
      out.line("const u64 desc_b = smem_descriptor_sw128(" + box + " + (s % 4) * 16);");
    } else {
      out.line("const u64 desc_b = smem_descriptor_mn_sw128(" + box +
               " + (s % 4) * 16 * 64);  // rows 16s..16s+15");
    }
    if (s_.operand_in_shared) {
      out.line("const u64 desc_a = smem_descriptor_sw128(sop + " + std::to_string(buffers.operand_buffer) +
               " * BN1 * BM + (s / 4) * BM * 64 + a_row0 * 64 + (s % 4) * 16);");
      out.line("wgmma_second(acc2, desc_a, desc_b, (" + chunk + " > 0 || s > 0) ? 1 : 0);");
    } else {
      out.line("wgmma_second(acc2, " + buffers.hfrag + "[s], desc_b, (" + chunk + " > 0 || s > 0) ? 1 : 0);");
    }
    out.close();
    out.line("wgmma_commit();");
  }

  // The accumulator times exp(old max - new max) of its rows, before GEMM2 adds chunk `chunk`.
  void rescale_acc2(CodeStream& out, const std::string& chunk) const {
    if (max_ == nullptr) return;  // no running max: nothing to rescale
    out.open("if (" + chunk + " > 0)");
    out.line("#pragma unroll");
    out.line("for (int i = 0; i < O / 2; ++i) acc2[i] *= scale[(i >> 1) & 1];");
    out.close();
  }

  void release_gemm2(CodeStream& out, const std::string& chunk) const {
    out.line("if ((threadIdx.x & 127) == 0) mbar_arrive(&empty_b[(" + walk_.walked(chunk) + ") & 1]);");
  }

  // The statistics' final values, the operand's row factor, GEMM2's epilogue and the store.
  void finish(CodeStream& out) const {
    const auto& second = plan_.second;
    ExprBindings rows;
    if (plan_.divisor || plan_.multiplier) {
      out.line("// Sums over the row's quad of lanes, then the row values and the operand's final factor.");
      out.line("float factor[2];");
      out.open("for (int h = 0; h < 2; ++h)");
      out.line("const int grow = m0 + local_row0 + 8 * h;");
      out.line("(void)grow;");
      for (const OnlineStatistic& s : plan_.statistics) {
        if (s.kind == OnlineStatistic::Kind::kRunningMax) {
          rows.reads[s.tensor.get()] = "safe_max[h]";
          continue;
        }
        const std::string name = "sum_" + s.tensor.name() + "[h]";
        out.line(name + " += __shfl_xor_sync(0xffffffffu, " + name + ", 1);");
        out.line(name + " += __shfl_xor_sync(0xffffffffu, " + name + ", 2);");
        rows.reads[s.tensor.get()] = name;
      }
      for (const te::Tensor& t : plan_.row_values) {
        ExprBindings here = rows;
        bind_axes(t, false, here);
        out.line("const float r_" + t.name() + " = " + emit_expr(t->body, here) + ";");
        rows.reads[t.get()] = "r_" + t.name();
      }
      if (plan_.divisor) out.line("factor[h] = 1.0f / " + read_of(*plan_.divisor, rows) + ";");
      if (plan_.multiplier) out.line("factor[h] = " + read_of(*plan_.multiplier, rows) + ";");
      out.close();
    }
    out.line("// GEMM2's epilogue on its accumulator, stored with the row and column tails predicated. O is");
    out.line("// even: a thread's two neighbouring columns leave together from the odd element.");
    for (const te::Tensor& output : plan_.program.outputs()) {
      out.line(memory_element_type(output.dtype()) + " pend_" + output.name() + " = 0;");
    }
    out.line("#pragma unroll");
    out.open("for (int i = 0; i < O / 2; ++i)");
    out.line("const int h = (i >> 1) & 1;");
    out.line("const int grow = m0 + local_row0 + 8 * h;");
    out.line("const int gcol = (i >> 2) * 8 + (lane & 3) * 2 + (i & 1);");
    if (!s_.tma_store) out.line("const bool inb = grow < M && gcol < O;");
    out.line("const float v_" + second.tensor.name() + " = acc2[i]" +
             (plan_.divisor || plan_.multiplier ? " * factor[h]" : "") + ";");
    ExprBindings after;
    after.reads[second.tensor.get()] = "v_" + second.tensor.name();
    for (const te::Tensor& t : plan_.epilogue) {
      ExprBindings here = after;
      bind_axes(t, true, here);
      out.line("const float v_" + t.name() + " = " + emit_expr(t->body, here) + ";");
      after.reads[t.get()] = "v_" + t.name();
    }
    for (const te::Tensor& output : plan_.program.outputs()) {
      const std::string pending = "pend_" + output.name();
      const std::string value = store_value(output.dtype(), read_of(output, after));
      if (s_.tma_store) {
        // X's layout: 64-column boxes of BM rows, 16-byte pieces swizzled by the row (as GEMM2's operand).
        out.line("const int row = local_row0 + 8 * h, col = gcol - 1, piece = ((col & 63) / 8) ^ (row % 8);");
        out.line("if ((i & 1) == 0) " + pending + " = " + value + ";");
        out.line("else *(u32*)(sx + (col / 64) * BM * 64 + row * 64 + piece * 8 + col % 8) = (u32)" +
                 pending + " | ((u32)" + value + " << 16);");
        continue;
      }
      out.line("if ((i & 1) == 0) " + pending + " = " + value + ";");
      const std::string first = "&out_" + output.name() + "[((size_t)batch * M + grow) * O + gcol - 1]";
      std::string pair;
      if (te::dtype_bytes(output.dtype()) == 2) {
        pair = "*(u32*)" + first + " = (u32)" + pending + " | ((u32)" + value + " << 16)";
      } else {
        pair = "*(float2*)" + first + " = make_float2(" + pending + ", " + value + ")";
      }
      out.line("else if (inb) " + pair + ";");
    }
    out.close();
    if (s_.tma_store) tma_store_tile(out);
  }

  // The warpgroup's staged 64 x O tile to global memory: fenced and met, then one thread stores its boxes
  // (none when the rows lie wholly past M) and waits until they have read shared memory, so that X's buffer
  // can take a later block.
  void tma_store_tile(CodeStream& out) const {
    out.line("shared_ready(consumer);");
    out.open("if ((threadIdx.x & 127) == 0)");
    out.open("if (m0 + a_row0 < M)");
    out.line("#pragma unroll");
    out.open("for (int b = 0; b < (O + 63) / 64; ++b)");
    out.line("tma_store_2d(&tma_out, sx + b * BM * 64 + a_row0 * 64, 64 * b, batch * M + m0 + a_row0);");
    out.close();
    out.line("bulk_commit();");
    out.line("bulk_wait_read_all();");
    out.close();
    if (s_.persistent) {
      out.line("// The tile has left X's buffer: it goes back to the producer for the block after next.");
      out.line("mbar_arrive(&empty_x[round & 1]);");
    }
    out.close();
  }

  int threads() const { return 128 * (1 + consumers_); }

  // With one consumer warpgroup two CTAs share the register file: 24 + 232 of the 2 x 128 at launch.
  int producer_registers() const { return consumers_ == 1 ? 24 : 40; }

  const schedule::B2BPlan& plan_;
  const B2BSchedule& s_;
  const std::string& key_;
  const bool batched_;
  const int consumers_;
  const B2BWalk walk_;  // the row blocks' mapping and loop, and the producer
  // The running max of an online softmax (attention), or nullptr (MLPs): what splits the tiles into two
  // passes and rescales the accumulator.
  const OnlineStatistic* const max_;
  std::vector<te::Tensor> first_pass_, second_pass_;
};

}  // namespace

KernelSource emit_b2b_kernel(const schedule::B2BPlan& plan, const B2BSchedule& schedule,
                             const std::string& workload_key) {
  check_b2b_supported(plan);
  schedule::check_legal(plan, schedule);
  return B2BEmitter(plan, schedule, workload_key).emit();
}

}  // namespace comfuse::codegen
