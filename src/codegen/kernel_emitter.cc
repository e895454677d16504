// The fused kernel's skeleton: parameters, shared memory, warp roles, the TMA producer, the wgmma mainloop
// and the tile loops that drive the Stage-Stream epilogue.
#include <algorithm>

#include "codegen/code_stream.h"
#include "codegen/device_prelude.h"
#include "codegen/epilogue_emitter.h"
#include "codegen/epilogue_names.h"
#include "codegen/expr_emitter.h"
#include "codegen/finish_kernel.h"
#include "codegen/group_exchange.h"
#include "codegen/kernel_helpers.h"
#include "codegen/kernel_source.h"
#include "codegen/phase_trace.h"
#include "codegen/staged_inputs.h"
#include "codegen/tile_mapping.h"
#include "codegen/wgmma_emitter.h"
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

class KernelEmitter {
 public:
  KernelEmitter(const FusionPlan& plan, const Schedule& schedule, const std::string& key,
                const EmitOptions& options)
      : plan_(schedule::effective_plan(plan, schedule)),
        s_(schedule),
        key_(key),
        staged_(plan_, schedule),
        trace_(options.phase_trace, trace_capacity()) {}

  // The phase trace's records a slot: a tile's events (a consumer's: at most six, and three a later stage)
  // times the tiles a CTA may take, bounded; records past it are counted and reported as truncation.
  int trace_capacity() const {
    const std::int64_t m_blocks = ceil_div(plan_.anchor.m, s_.bm), n_tiles = ceil_div(plan_.anchor.n, s_.bn);
    std::int64_t tiles = 2;  // a CTA's tiles without a persistent grid: one, or a ping-pong pair
    if (s_.persistent) {
      tiles = ceil_div(m_blocks * n_tiles, 16);  // assume at least 16 CTAs
    } else if (reduces_in_kernel()) {
      tiles = ceil_div(n_tiles, s_.cluster_n);  // one row block's column tiles
    }
    const std::int64_t per_tile = 6 + 3 * static_cast<std::int64_t>(plan_.stages.size());
    return static_cast<int>(std::clamp<std::int64_t>(per_tile * tiles + 8, 32, 4096));
  }

  // Persistent reduction plans: clusters walk row blocks. In ping-pong the two consumer warpgroups take
  // alternate row blocks, each with all of the CTA's column tiles, and exchange row partials on their own.
  bool walks_row_blocks() const { return s_.persistent && reduces_in_kernel(); }
  // Row reductions combined inside the main kernel: every placement but `deferred`, whose CTAs take tiles as
  // a plan without reductions does and leave the combine to the finish kernel.
  bool reduces_in_kernel() const { return plan_.has_reductions() && !s_.deferred(); }
  bool warpgroups_own_rows() const { return walks_row_blocks() && s_.alternate_row_blocks(); }
  // global_exchange: the exchanging groups of a CTA, each with its own round counter and buffers (both
  // warpgroups when they own their rows).
  int exchange_groups() const { return warpgroups_own_rows() ? 2 : 1; }
  // global_exchange: the counters' bytes in the workspace, a word per exchanging group of each row block's
  // group of CTAs and one counting its CTAs done, to a 16-byte boundary.
  std::int64_t exchange_counter_bytes(std::int64_t m_blocks) const {
    return ceil_div(4 * m_blocks * (exchange_groups() + 1), 16) * 16;
  }

  KernelSource emit() {
    KernelSource result;
    result.schedule = s_;
    result.name = "comfuse_" + plan_.anchor.tensor.name() + "_" + key_.substr(key_.find(':') + 1, 12);
    std::map<const te::TensorNode*, std::string> param_names;
    result.params.push_back({KernelParam::Kind::kTmaA, plan_.anchor.a});
    // multicast_b: each CTA of the cluster loads half of the B box.
    result.params.push_back({KernelParam::Kind::kTmaB, plan_.anchor.b, s_.multicast_b ? s_.bn / 2 : 0});
    for (const auto& input : plan_.epilogue_inputs) {
      result.params.push_back({KernelParam::Kind::kInput, input.tensor});
      param_names[input.tensor.get()] = "in_" + input.tensor.name();
    }
    for (const te::Tensor& output : plan_.program.outputs()) {
      result.params.push_back({KernelParam::Kind::kOutput, output});
      param_names[output.get()] = "out_" + output.name();
    }
    if (s_.tma_store && s_.deferred()) {
      result.params.push_back({KernelParam::Kind::kTmaStash, plan_.carried_tiles.at(0), 64});
    } else if (s_.tma_store) {
      result.params.push_back({KernelParam::Kind::kTmaOut, plan_.program.outputs()[0], 64});
    }
    for (const auto& [input, rows] : staged_.boxes())
      result.params.push_back({KernelParam::Kind::kTmaIn, input, rows});
    result.params.push_back({KernelParam::Kind::kStash, te::Tensor()});
    if (trace_.enabled()) {
      result.params.push_back({KernelParam::Kind::kTrace, te::Tensor()});
      result.trace_capacity = trace_.capacity();
    }
    if (s_.carried == ValueHome::kL2Stash) {
      result.stash_bytes = static_cast<std::int64_t>(plan_.carried_tiles.size()) * plan_.anchor.m *
                           plan_.anchor.n * te::dtype_bytes(schedule::stash_dtype(s_));
    }
    EpilogueEmitter epilogue(plan_, s_, param_names);
    if (trace_.enabled()) epilogue.set_trace(&trace_);
    xslots_ = std::max(1, epilogue.max_reductions_per_stage());

    const std::int64_t m_blocks = ceil_div(plan_.anchor.m, s_.bm);
    const std::int64_t n_tiles = ceil_div(plan_.anchor.n, s_.bn);
    // The row blocks the grid covers: with multicast_b, pairs of them (a lone last one taken twice).
    const std::int64_t grid_rows = s_.multicast_b ? 2 * ceil_div(m_blocks, 2) : m_blocks;
    if (s_.deferred()) {
      // The row partials follow the carried tiles in the workspace, from a 16-byte boundary.
      parts_offset_ = ceil_div(result.stash_bytes, 16) * 16;
      result.stash_bytes = parts_offset_ + 4 * xslots_ * n_tiles * plan_.anchor.m;
      result.finish_name = result.name + "_finish";
      result.launch.finish_grid_x =
          static_cast<int>(ceil_div(plan_.anchor.m, schedule::finish_rows_per_cta(s_)));
      result.launch.finish_block_x = schedule::kFinishThreads;
      result.launch.persistent_finish = s_.persistent_finish;
    }
    if (s_.global_exchange) {
      // The exchange's round counters (a word per exchanging group of each CTA group, and one counting the
      // CTAs done), then the row partials, after whatever the workspace holds, from a 16-byte boundary.
      exchange_offset_ = ceil_div(result.stash_bytes, 16) * 16;
      result.stash_bytes = exchange_offset_ + exchange_counter_bytes(m_blocks) +
                           4 * m_blocks * exchange_groups() * group_exchange_protocol().buffers *
                               s_.cluster_n * xslots_ * s_.bm;
      result.zeroed_workspace = true;
      result.launch.group_x = s_.cluster_n;
      result.launch.cooperative = true;
    }
    result.launch.block_x = s_.threads();
    result.launch.cluster_x = schedule::cluster_ctas(plan_, s_);
    if (reduces_in_kernel()) {
      result.launch.grid_x = static_cast<int>(m_blocks * s_.cluster_n);
      result.launch.row_blocks = true;
      result.launch.persistent = s_.persistent;
    } else if (s_.persistent) {
      result.launch.grid_x = static_cast<int>(grid_rows * n_tiles);
      result.launch.persistent = true;
    } else if (s_.warp_roles == WarpRoles::kPingPong) {
      result.launch.grid_x = static_cast<int>(grid_rows * ceil_div(n_tiles, 2));
    } else {
      result.launch.grid_x = static_cast<int>(grid_rows * n_tiles);
    }
    result.launch.shared_bytes = static_cast<int>(shared_bytes());

    CodeStream out;
    header(out);
    out.raw(device_prelude());
    out.line();
    constants(out, m_blocks, n_tiles);
    emit_wgmma_ss(out, "wgmma_step", s_.bn, plan_.anchor.a.dtype());
    out.line();
    if (s_.tma_store) emit_tma_store_helpers(out, s_.store_chunks);
    if (s_.packed_rounding) emit_packed_rounding_helpers(out);
    trace_.helpers(out);
    if (s_.multicast_b) emit_multicast_helpers(out);
    if (s_.stash_evict_last) emit_stash_keep_helpers(out, s_.stash_in_slot);
    if (staged_.streams_loads()) emit_streaming_helpers(out);
    epilogue.helpers(out);
    if (s_.prefetch_inputs) emit_prefetch_helper(out);
    if (s_.global_exchange) emit_global_exchange_helpers(out);
    staged_.helpers(out);
    emit_tile_mapping(out, s_, walks_row_blocks(), reduces_in_kernel());
    kernel(out, result, epilogue);
    if (s_.deferred())
      emit_finish_kernel(out, plan_, s_, result.finish_name, parameters(result), param_names);
    result.source = out.str();
    return result;
  }

 private:
  std::int64_t shared_bytes() const {
    const std::int64_t ring = static_cast<std::int64_t>(s_.stages) * (s_.bm + s_.bn) * 64 * 2;
    const std::int64_t barriers = 8 * (2 * s_.stages + 4) + (warpgroups_own_rows() ? 16 : 0);
    const std::int64_t exchange = s_.cluster_n > 1 && !s_.global_exchange
                                      ? 4LL * 2 * s_.cluster_n * xslots_ * s_.bm * exchange_groups()
                                      : 0;
    const bool pairs = s_.warpgroup_combine_buffers() && reduces_in_kernel();
    const std::int64_t warpgroup_combine = pairs ? 4LL * 2 * 2 * xslots_ * s_.bm : 0;
    return 1024 + ring + s_.output_staging_bytes() + barriers + exchange + warpgroup_combine +
           schedule::shared_stash_bytes(plan_, s_) + schedule::staged_input_bytes(plan_, s_);
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
    if (s_.multicast_b)
      out.line(
          "constexpr int M_PAIRS = (M_BLOCKS + 1) / 2;  // the clusters' pairs of row blocks (multicast_b)");
    if (s_.carried == ValueHome::kShared) {
      out.line("constexpr int TILES_PER_CTA = " + std::to_string(ceil_div(n_tiles, s_.cluster_n)) +
               ";  // column tiles a CTA stashes in shared memory");
      if (warpgroups_own_rows()) {
        out.line("constexpr int STASH_FLOATS = " + std::to_string(plan_.carried_tiles.size()) +
                 " * TILES_PER_CTA * (BN / 2) * (BM * 2);  // of each warpgroup's row block");
      }
    }
    if (s_.deferred()) {
      out.line("constexpr size_t PARTS_BYTE = " + std::to_string(parts_offset_) +
               ";  // the row partials' offset in the workspace");
      out.line("constexpr int ROW_ELEMS = " + std::to_string(schedule::kFinishRowElements) +
               ";  // the finish kernel's elements a lane per step along a row");
      if (s_.finish_row_split) {
        out.line("constexpr int ROW_SPLIT = " + std::to_string(schedule::kFinishSplit) +
                 ";  // the finish kernel's warps a row");
      }
    }
    if (s_.global_exchange) {
      out.line("constexpr size_t XCOUNT_BYTE = " + std::to_string(exchange_offset_) +
               ", XCH_BYTE = " + std::to_string(exchange_offset_ + exchange_counter_bytes(m_blocks)) +
               ";  // the exchange's counters and row partials in the workspace");
      out.line("constexpr int XGROUPS = " + std::to_string(exchange_groups()) +
               ";  // exchanging groups a CTA: a round counter and buffers each");
    }
    out.line("constexpr u32 STAGE_BYTES = (BM + BN) * BK * 2;");
    out.line();
  }

  // The kernel's parameter list (the finish kernel takes the same, so that one argument array serves both).
  std::string parameters(const KernelSource& result) const {
    std::string params =
        "const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b";
    for (const KernelParam& p : result.params) {
      switch (p.kind) {
        case KernelParam::Kind::kTmaA:
        case KernelParam::Kind::kTmaB:
          break;
        case KernelParam::Kind::kInput:
          params += ",\n    const " + memory_element_type(p.tensor.dtype()) + "* __restrict__ in_" +
                    p.tensor.name();
          break;
        case KernelParam::Kind::kOutput:
          params +=
              ",\n    " + memory_element_type(p.tensor.dtype()) + "* __restrict__ out_" + p.tensor.name();
          break;
        case KernelParam::Kind::kStash:
          params += ",\n    " + memory_element_type(schedule::stash_dtype(s_)) + "* __restrict__ stash";
          break;
        case KernelParam::Kind::kTmaOut:
          params += ",\n    const __grid_constant__ TmaDescriptor tma_out";
          break;
        case KernelParam::Kind::kTmaStash:
          params += ",\n    const __grid_constant__ TmaDescriptor tma_stash";
          break;
        case KernelParam::Kind::kTmaIn:
          params += ",\n    const __grid_constant__ TmaDescriptor tma_in_" + p.tensor.name();
          break;
        case KernelParam::Kind::kTrace:
          params += trace_.parameter();
          break;
      }
    }
    return params;
  }

  void kernel(CodeStream& out, const KernelSource& result, const EpilogueEmitter& epilogue) const {
    const std::string params = parameters(result);
    out.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s_.threads()) + ", 1)");
    out.open(result.name + "(" + params + ")");
    out.line("extern __shared__ unsigned char smem_raw[];");
    out.line("// 128-byte swizzled operand tiles need 1024-byte alignment.");
    if (s_.shared_pointers) {
      out.line("// (An offset from the shared array: pointers carved from it stay shared for the compiler.)");
      out.line("unsigned char* smem = smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);");
    } else {
      out.line("unsigned char* smem = (unsigned char*)(((u64)smem_raw + 1023) & ~(u64)1023);");
    }
    out.line("u16* sA = (u16*)smem;                       // [STAGES][BM][64]");
    out.line("u16* sB = sA + STAGES * BM * BK;            // [STAGES][BN][64]");
    // (An output stored in place needs no staging memory of its own: it goes over a staged input's slot.)
    const bool staging = s_.tma_store && !s_.stores_in_place();
    if (staging) {
      out.line(
          s_.store_chunks
              ? "u16* sOut = sB + STAGES * BN * BK;          // [CONSUMERS][2][64][64] output boxes, swizzled"
              : "u16* sOut = sB + STAGES * BN * BK;          // [CONSUMERS][BN / 64][64][64] output tiles, "
                "swizzled");
      const std::string end = std::string("sOut + CONSUMERS * 64 * ") + (s_.store_chunks ? "128" : "BN");
      if (staged_.empty()) {
        out.line("u64* full = (u64*)(" + end + ");  // TMA data landed in stage s");
      } else {  // a deferred reduction's stash tile and its staged inputs
        staged_.carve(out, end);
        out.line("u64* full = " + staged_.barriers_end() +
                 ";                   // TMA data landed in stage s");
      }
    } else if (!staged_.empty()) {
      staged_.carve(out, "sB + STAGES * BN * BK");
      out.line("u64* full = " + staged_.barriers_end() + ";                   // TMA data landed in stage s");
    } else {
      out.line("u64* full = (u64*)(sB + STAGES * BN * BK);  // TMA data landed in stage s");
    }
    out.line("u64* empty = full + STAGES;                 // consumers released stage s");
    if (s_.global_exchange) {
      global_exchange_carve(out);
    } else if (warpgroups_own_rows()) {
      out.line(
          "u64* xbar = empty + STAGES;                 // cluster exchange rounds, double-buffered, per "
          "warpgroup");
      out.line(
          "u64* order = xbar + 4;                      // ping-pong: the mainloops of row block k finished");
      out.line(
          "float* xch = (float*)(order + 2);           // [2 warpgroups][2][CLUSTER_N][XSLOTS][BM] row "
          "partials from each peer");
      out.line(
          "float* wgx = xch + (CLUSTER_N > 1 ? 2 * 2 * CLUSTER_N * XSLOTS * BM : 0);  // unused: rows are "
          "not shared");
    } else {
      out.line("u64* xbar = empty + STAGES;                 // cluster exchange rounds, double-buffered");
      out.line("u64* order = xbar + 2;                      // ping-pong: the mainloop of tile t finished");
      out.line(
          "float* xch = (float*)(order + 2);           // [2][CLUSTER_N][XSLOTS][BM] row partials from each "
          "peer");
      out.line(
          "float* wgx = xch + (CLUSTER_N > 1 ? 2 * CLUSTER_N * XSLOTS * BM : 0);  // [2][2][XSLOTS][BM] from "
          "each ping-pong warpgroup");
    }
    if (!s_.global_exchange) out.line("(void)xbar; (void)xch; (void)order; (void)wgx;");
    if (s_.carried == ValueHome::kShared) {
      // (After the ping-pong warpgroups' combine buffers, where there are any.)
      const bool pairs = s_.warpgroup_combine_buffers();
      const std::string at = std::string("wgx + ") + (pairs ? "2 * 2 * XSLOTS * BM" : "0");
      out.line(s_.bf16_stash
                   ? "u16* sstash = (u16*)(" + at +
                         ");  // [carried][TILES_PER_CTA][BN / 2][BM * 2] "
                         "carried tiles as bf16, thread-fastest"
                   : "float* sstash = " + at +
                         ";  // [carried][TILES_PER_CTA][BN / 2][BM * 2] carried tiles, thread-fastest");
    }
    out.line("const int warpgroup = threadIdx.x / 128;");
    std::string empty_count = s_.warp_roles == WarpRoles::kPingPong ? "1" : "CONSUMERS";
    if (s_.multicast_b) empty_count = "2 * " + empty_count;  // both CTAs' consumers release a stage
    out.open("if (threadIdx.x == 0)");
    out.open("for (int s = 0; s < STAGES; ++s)");
    out.line("mbar_init(&full[s], 1);");
    out.line("mbar_init(&empty[s], " + empty_count + ");");
    out.close();
    // Row partials go to the cluster's peers from the lanes that lead each row's quad: of every consumer
    // warpgroup when they own different rows, of the first alone in ping-pong (both own the same rows).
    const std::string writers = s_.warp_roles == WarpRoles::kPingPong ? "32" : "32 * CONSUMERS";
    if (!s_.global_exchange) {
      out.line("mbar_init(&xbar[0], CLUSTER_N * " + writers + ");");
      out.line("mbar_init(&xbar[1], CLUSTER_N * " + writers + ");");
    }
    if (warpgroups_own_rows() && !s_.global_exchange) {
      out.line("mbar_init(&xbar[2], CLUSTER_N * 32);");
      out.line("mbar_init(&xbar[3], CLUSTER_N * 32);");
    }
    out.line("mbar_init(order, 1);");
    if (!staged_.empty())
      staged_.init_barriers(out, s_.warp_roles == WarpRoles::kPingPong ? "1" : "CONSUMERS");
    out.line("fence_mbar_init();");
    out.close();
    out.line(result.launch.cluster_x > 1 ? "cluster_sync();" : "__syncthreads();");
    if (s_.global_exchange) {
      out.line("const u32 cta_rank = blockIdx.x % CLUSTER_N;  // in the group of consecutive CTAs");
    } else {
      out.line("const u32 cta_rank = " + std::string(result.launch.cluster_x > 1 ? "cluster_rank();" : "0;"));
    }
    out.line("const TileSequence tiles = cta_tiles(cta_rank);");
    trace_.begin(out, "(1 + CONSUMERS)");
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
    for (const auto& [input, rows] : staged_.boxes())
      out.line("tma_prefetch_descriptor(&tma_in_" + input.name() + ");");
    staged_.produce_resident(out);
    if (walks_row_blocks()) {
      out.open(
          "for (int k = 0, m_block = tiles.first_block; m_block < M_BLOCKS; ++k, m_block += "
          "tiles.block_stride)");
      out.open("for (int t = 0; t < tiles.count; ++t)");
      out.line("const int g = k * tiles.count + t;  // the CTA's tiles so far");
    } else {
      out.open("for (int t = 0; t < tiles.count; ++t)");
    }
    // The tile's row block and column tile: from the strided sequence, the row-block walk, or the CTA's own.
    const bool strided = s_.persistent && !walks_row_blocks();
    if (strided) {
      out.line("int tile_m, tile_n;");
      out.line("tiles.at(t, tile_m, tile_n);");
    }
    const std::string m_block = strided ? "tile_m" : walks_row_blocks() ? "m_block" : "tiles.m_block";
    const std::string n_tile = strided ? "tile_n" : "tiles.n_tile(t)";
    trace_.mark(out, TraceEvent::kProducerTileBegin, 0, m_block, n_tile);
    if (s_.prefetch_inputs) prefetch_tile_inputs(out, m_block, n_tile);
    const std::string tile = walks_row_blocks() ? "g" : "t";
    if (!staged_.empty() && !staged_.loads_after_operands()) staged_.produce(out, tile, m_block, n_tile);
    out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
    out.line(walks_row_blocks() ? "const int it = g * K_BLOCKS + kb;" : "const int it = t * K_BLOCKS + kb;");
    out.line("const int s = it % STAGES;");
    out.line("mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);");
    out.line("mbar_expect_tx(&full[s], STAGE_BYTES);");
    out.line("tma_load_2d(sA + s * BM * BK, &tma_a, &full[s], kb * BK, " + m_block + " * BM);");
    if (s_.multicast_b) {
      out.line(
          "tma_load_2d_multicast(sB + s * BN * BK + cta_rank * (BN / 2) * BK, &tma_b, &full[s], kb * BK, " +
          n_tile + " * BN + cta_rank * (BN / 2), 3);");
    } else {
      out.line("tma_load_2d(sB + s * BN * BK, &tma_b, &full[s], kb * BK, " + n_tile + " * BN);");
    }
    out.close();
    if (!staged_.empty() && staged_.loads_after_operands()) staged_.produce(out, tile, m_block, n_tile);
    trace_.mark(out, TraceEvent::kProducerTileEnd, 0, m_block, n_tile);
    out.close();
    if (walks_row_blocks()) out.close();
    if (s_.multicast_b) {
      out.line(
          "// Stay until both CTAs' consumers have released the last stages: the peer's releases arrive on "
          "this CTA's");
      out.line("// barriers, and the peer writes into this CTA's ring until then.");
      out.open("for (int it = tiles.count * K_BLOCKS; it < tiles.count * K_BLOCKS + STAGES; ++it)");
      out.line("mbar_wait(&empty[it % STAGES], ((it / STAGES) & 1) ^ 1);");
      out.close();
    }
    out.close();
    trace_.end(out);
    out.line("return;");
    out.close();
  }

  // Schedule::stores_in_place: the TMA stores of the tile that went over the staged slot (the output, or a
  // deferred reduction's stash) must have read it before the slot is released.
  void stores_read_slot(CodeStream& out) const {
    out.line(std::string("// The ") + (s_.deferred() ? "stash" : "output") +
             " went over the staged slot: its stores must have read it before it is released.");
    out.line("if (store_leader) bulk_wait_read_all();");
    out.line("warpgroup_sync(consumer);");
  }

  // prefetch_inputs: the tile's rows of every input read per element, asked of L2 while its operands stream.
  void prefetch_tile_inputs(CodeStream& out, const std::string& m_block, const std::string& n_tile) const {
    out.line(
        "// Ask L2 for this tile's rows of the inputs its epilogue reads per element, a mainloop ahead.");
    out.open("");
    out.line("const int pm0 = " + m_block + " * BM, pn0 = " + n_tile + " * BN;");
    out.line("const int columns = min(BN, N - pn0);");
    out.open("for (int r = 0; r < BM && pm0 + r < M; ++r)");
    for (const schedule::EpilogueInput& input : plan_.epilogue_inputs) {
      if (input.broadcast != schedule::Broadcast::kFull) continue;
      const std::string bytes = std::to_string(te::dtype_bytes(input.tensor.dtype()));
      out.line("prefetch_l2(&in_" + input.tensor.name() + "[(size_t)(pm0 + r) * N + pn0], columns * " +
               bytes + ");");
    }
    out.close();
    out.close();
  }

  void mainloop(CodeStream& out) const {
    const bool ping_pong = s_.warp_roles == WarpRoles::kPingPong;
    const std::string tile = walks_row_blocks() ? "g" : "t";  // the CTA's tiles so far
    if (warpgroups_own_rows()) {
      out.line(
          "// Ping-pong on row blocks: start after the other warpgroup's mainloops of row block k-1, so that "
          "this one runs");
      out.line(
          "// while that one is in its epilogue, and so that every ring barrier waited on is at most one "
          "phase ahead.");
      out.line("if (t == 0 && k > 0) mbar_wait(order, (k - 1) & 1);");
    } else if (ping_pong) {
      out.line(
          "// Ping-pong: start after the other warpgroup's mainloop of tile t-1, so that this one runs while "
          "that one");
      out.line("// is in its epilogue, and so that every ring barrier waited on is at most one phase ahead.");
      out.line("if (t > 0) mbar_wait(order, (t - 1) & 1);");
    }
    trace_.mark(out, TraceEvent::kMainloopBegin, 0, "m0 / BM", "n0 / BN");
    out.line(
        "// Mainloop: wgmma over the K blocks, one group in flight, each stage released once its group "
        "retires.");
    out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
    out.line("const int it = " + tile + " * K_BLOCKS + kb;");
    out.line("const int s = it % STAGES;");
    out.line("mbar_wait(&full[s], (it / STAGES) & 1);");
    trace_.mark(out, TraceEvent::kFirstStageReady, 0, "m0 / BM", "n0 / BN", "kb == 0");
    out.line("wgmma_fence();");
    out.line("#pragma unroll");
    out.open("for (int kk = 0; kk < BK / 16; ++kk)");
    out.line("const u64 desc_a = smem_descriptor_sw128(sA + s * BM * BK + a_row0 * BK + kk * 16);");
    out.line("const u64 desc_b = smem_descriptor_sw128(sB + s * BN * BK + kk * 16);");
    out.line("wgmma_step(acc, desc_a, desc_b, (kb > 0 || kk > 0) ? 1 : 0);");
    out.close();
    out.line("wgmma_commit();");
    out.line("wgmma_wait<1>();");
    // A stage's release: in this CTA, or with multicast_b in both.
    const auto release = [&](const std::string& stage) {
      return s_.multicast_b ? "release_stage(" + stage + ", cta_rank ^ 1);" : "mbar_arrive(" + stage + ");";
    };
    out.line("if (kb > 0 && (threadIdx.x & 127) == 0) " + release("&empty[(it - 1) % STAGES]"));
    out.close();
    if (s_.early_handoff) {
      out.line("// early_handoff: the other warpgroup's wgmma queue behind this one's last group.");
      hand_over(out);
    }
    out.line("wgmma_wait<0>();");
    trace_.mark(out, TraceEvent::kMainloopEnd, 0, "m0 / BM", "n0 / BN");
    out.line("if ((threadIdx.x & 127) == 0) " +
             release("&empty[(" + tile + " * K_BLOCKS + K_BLOCKS - 1) % STAGES]"));
    if (!s_.early_handoff) hand_over(out);
  }

  // Ping-pong: the other warpgroup may start its mainloop (after this one's last tile of the row block, where
  // the warpgroups take alternate row blocks).
  void hand_over(CodeStream& out) const {
    if (warpgroups_own_rows()) {
      out.line("if (t == tiles.count - 1 && (threadIdx.x & 127) == 0) mbar_arrive(order);");
    } else if (s_.warp_roles == WarpRoles::kPingPong) {
      out.line("if ((threadIdx.x & 127) == 0) mbar_arrive(order);");
    }
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
    if (!s_.persistent) out.line("const int m0 = tiles.m_block * BM;");
    // Ping-pong warpgroups share rows (and combine their partials) unless they take alternate row blocks.
    const bool shared_rows = ping_pong && !warpgroups_own_rows();
    out.line("int xround = 0, wround = 0;  // cluster exchanges and warpgroup combines so far");
    out.line("(void)xround; (void)wround;");
    // (With multicast_b the cluster's CTAs own different rows; only reductions combined in a cluster share
    // them.)
    out.line(std::string("const bool row_writer = (lane & 3) == 0") +
             (s_.multicast_b ? "" : " && cta_rank == 0") + (shared_rows ? " && consumer == 0;" : ";") +
             "  // writes row-value outputs");
    out.line("(void)row_writer;");
    if (s_.carried == ValueHome::kShared) {
      out.line(std::string("const int stash_thread = ") +
               (ping_pong ? "threadIdx.x & 127" : "threadIdx.x - 128") +
               ";  // this thread's word in each stashed row of fragments");
    }
    out.line("float acc[BN / 2];");
    if (s_.stash_evict_last)
      out.line("const u64 l2_keep = l2_evict_last_policy();  // for the stash's stores");
    epilogue.declare_state(out);
    if (!staged_.empty()) {
      staged_.declare(out);
      staged_.wait_resident(out);
    }
    out.line();
    if (s_.tma_store && !s_.stores_in_place()) {
      out.line(s_.store_chunks
                   ? "u16* stage_out = sOut + consumer * 64 * 128;  // this warpgroup's two output boxes"
                   : "u16* stage_out = sOut + consumer * 64 * BN;  // this warpgroup's output tile");
    }
    if (s_.tma_store) out.line("const bool store_leader = (threadIdx.x & 127) == 0;");
    if (warpgroups_own_rows()) {
      out.line("// This warpgroup's cluster exchange buffers and rounds.");
      out.line("float* const wg_xch = xch + consumer * (2 * CLUSTER_N * XSLOTS * BM);");
      if (s_.global_exchange) {
        out.line("u32* const wg_xcount = xcount + consumer;");
        out.line("(void)wg_xch; (void)wg_xcount;");
      } else {
        out.line("u64* const wg_xbar = xbar + 2 * consumer;");
        out.line("(void)wg_xch; (void)wg_xbar;");
      }
      if (s_.carried == ValueHome::kShared)
        out.line("sstash += consumer * STASH_FLOATS;  // this warpgroup's stash");
    }
    if (walks_row_blocks()) {
      out.open(
          "for (int k = 0, m_block = tiles.first_block; m_block < M_BLOCKS; ++k, m_block += "
          "tiles.block_stride)");
      if (warpgroups_own_rows())
        out.line("if ((k & 1) != consumer) continue;  // ping-pong: alternate row blocks");
      out.line("const int m0 = m_block * BM;");
    }
    if (s_.deferred()) {
      if (!s_.finish_reductions)  // (with it the finish kernel reduces its rows from the stash)
        out.line(std::string("float* const parts = (float*)((unsigned char*)stash + PARTS_BYTE);  // ") +
                 (s_.wide_finish ? "[M][XSLOTS][N_TILES]" : "[XSLOTS][N_TILES][M]"));
    } else {
      epilogue.begin_stage(out, 0);
    }
    out.open("for (int t = 0; t < tiles.count; ++t)");
    if (shared_rows) out.line("if ((t & 1) != consumer) continue;  // ping-pong: alternate tiles");
    if (walks_row_blocks()) {
      out.line("const int g = k * tiles.count + t;  // the CTA's tiles so far");
      out.line("const int n0 = tiles.n_tile(t) * BN;");
    } else if (s_.persistent) {
      out.line("int tile_m, tile_n;");
      out.line("tiles.at(t, tile_m, tile_n);");
      out.line("const int m0 = tile_m * BM, n0 = tile_n * BN;");
    } else {
      out.line("const int n0 = tiles.n_tile(t) * BN;");
    }
    mainloop(out);
    if (s_.tma_store && !s_.stores_in_place()) {
      out.line(
          "// The previous tile's TMA store must have read the staging buffer before it is overwritten.");
      out.line("if (store_leader) bulk_wait_read_all();");
      out.line("warpgroup_sync(consumer);");
    }
    if (!staged_.empty()) {
      staged_.wait(out, walks_row_blocks() ? "g" : "t");
      trace_.mark(out, TraceEvent::kInputsReady, 0, "m0 / BM", "n0 / BN");
    }
    if (s_.deferred()) epilogue.begin_stage(out, 0);  // each tile's own row partials
    epilogue.element_loop(out, 0);
    if (s_.stash_terms) epilogue.write_tile_terms(out);
    if (s_.deferred() && !s_.finish_reductions) epilogue.write_tile_partials(out);
    trace_.mark(out, TraceEvent::kElementsEnd, 0, "m0 / BM", "n0 / BN");
    const int last_stage = static_cast<int>(plan_.stages.size()) - 1;
    // The slot is released after the last stage that reads it: the first for a deferred reduction (its one
    // stage) and for one_input_slot in the kernel (whose rule keeps later stages out of the slot).
    const int release_stage = s_.deferred() || s_.one_input_slot ? 0 : last_stage;
    if (s_.deferred() && s_.stores_in_place()) {
      stores_read_slot(out);
      trace_.mark(out, TraceEvent::kStoreIssued, 0, "m0 / BM", "n0 / BN");
    }
    if (!staged_.empty() && release_stage == 0) staged_.release(out);
    if (s_.tma_store && s_.store_chunks) {
      // (the element loop stored each box; with row reductions in the kernel, the last stage's)
      if (!reduces_in_kernel()) trace_.mark(out, TraceEvent::kStoreIssued, 0, "m0 / BM", "n0 / BN");
    } else if (s_.tma_store && !s_.stores_in_place()) {
      out.line("// Make the tile visible to the TMA engine, then one thread stores it box by box.");
      out.line("fence_proxy_async_shared();");
      out.line("warpgroup_sync(consumer);");
      out.open("if (store_leader)");
      out.line("#pragma unroll");
      out.open("for (int b = 0; b < BN / 64; ++b)");
      out.line(std::string("tma_store_2d(") + (s_.deferred() ? "&tma_stash" : "&tma_out") +
               ", stage_out + b * 64 * 64, n0 + 64 * b, m0 + a_row0);");
      out.close();
      out.line("bulk_commit();");
      out.close();
      trace_.mark(out, TraceEvent::kStoreIssued, 0, "m0 / BM", "n0 / BN");
    }
    out.close();
    if (s_.tma_store && !reduces_in_kernel())
      out.line("if (store_leader) bulk_wait_all();  // shared memory lives until the stores read it");
    if (s_.deferred()) {  // the finish kernel runs the rest
      trace_.end(out);
      return;
    }
    const std::string row_block = std::to_string(kTraceRowBlock);
    epilogue.end_stage(out, 0);
    if (!plan_.stages[0].reductions.empty()) trace_.mark(out, TraceEvent::kCombined, 0, "m0 / BM", row_block);
    for (int stage = 1; stage < static_cast<int>(plan_.stages.size()); ++stage) {
      out.line();
      epilogue.begin_stage(out, stage);
      if (s_.carried == ValueHome::kRegisters) {
        const std::string mine = shared_rows ? "consumer" : "0";
        out.line("// Carried tiles are still in registers: this warpgroup's only column tile.");
        out.open("if (tiles.count > " + mine + ")");
        out.line("const int n0 = tiles.n_tile(" + mine + ") * BN;");
      } else {
        out.line(s_.carried == ValueHome::kShared
                     ? "// Carried tiles come back from shared memory, each element read by the thread that "
                       "wrote it."
                     : "// Carried tiles come back from the stash, each element read by the thread that "
                       "wrote it.");
        out.open("for (int t = 0; t < tiles.count; ++t)");
        if (shared_rows) out.line("if ((t & 1) != consumer) continue;");
        out.line("const int n0 = tiles.n_tile(t) * BN;");
      }
      epilogue.element_loop(out, stage);
      if (s_.stores_in_place() && stage == last_stage) stores_read_slot(out);
      if (!staged_.empty() && stage == release_stage) staged_.release(out);
      trace_.mark(out, TraceEvent::kElementsEnd, stage, "m0 / BM", "n0 / BN");
      if (s_.tma_store && stage == last_stage)
        trace_.mark(out, TraceEvent::kStoreIssued, stage, "m0 / BM", "n0 / BN");
      out.close();
      epilogue.end_stage(out, stage);
      if (!plan_.stages[stage].reductions.empty())
        trace_.mark(out, TraceEvent::kCombined, stage, "m0 / BM", row_block);
    }
    if (walks_row_blocks()) out.close();
    if (s_.tma_store && reduces_in_kernel())
      out.line("if (store_leader) bulk_wait_all();  // shared memory lives until the stores read it");
    if (s_.global_exchange) global_exchange_reset(out);
    trace_.end(out);
  }

  // global_exchange: the group's round counters and row partials, in the workspace; no exchange barriers.
  void global_exchange_carve(CodeStream& out) const {
    const bool own_rows = warpgroups_own_rows();
    out.line(std::string("u64* order = empty + STAGES;                // ping-pong: the mainloop") +
             (own_rows ? "s of row block k finished" : " of tile t finished"));
    out.line(std::string("float* wgx = (float*)(order + 2);           // ") +
             (own_rows ? "no combine buffers: rows are not shared"
                       : "[2][2][XSLOTS][BM] from each ping-pong warpgroup"));
    out.line(
        "// The group's row partials from each CTA, in the workspace ([XGROUPS][2][CLUSTER_N][XSLOTS][BM]");
    out.line(
        "// a group), and its counters (the rounds each exchanging group has arrived at, then the CTAs "
        "done).");
    out.line("const int group = blockIdx.x / CLUSTER_N;");
    out.line(
        "float* xch = (float*)((unsigned char*)stash + XCH_BYTE) + group * (XGROUPS * 2 * CLUSTER_N * XSLOTS "
        "* "
        "BM);");
    out.line("u32* xcount = (u32*)((unsigned char*)stash + XCOUNT_BYTE) + group * (XGROUPS + 1);");
    out.line("(void)xch; (void)xcount; (void)order; (void)wgx;");
  }

  // global_exchange: the last CTA of a group to finish sets its counters back to zero for the next launch
  // (every CTA of the group has read its last partials once it has counted itself done).
  void global_exchange_reset(CodeStream& out) const {
    out.line("// The group's counters back to zero for the next launch, by its last CTA to finish.");
    out.line("consumers_sync(CONSUMERS * 128);");
    out.open("if (threadIdx.x == 128)");
    out.line("__threadfence();");
    out.open("if (atomicAdd(&xcount[XGROUPS], 1u) == (u32)(CLUSTER_N - 1))");
    out.line("for (int g = 0; g <= XGROUPS; ++g) atomicExch(&xcount[g], 0u);");
    out.close();
    out.close();
  }

  const FusionPlan plan_;  // the effective plan of the schedule
  const Schedule& s_;
  const std::string& key_;
  int xslots_ = 1;
  std::int64_t parts_offset_ = 0;     // deferred: bytes of the workspace before the row partials
  std::int64_t exchange_offset_ = 0;  // global_exchange: bytes of the workspace before its counters
  const StagedInputs staged_;         // tma_inputs
  const PhaseTrace trace_;            // EmitOptions::phase_trace
};

}  // namespace

KernelSource emit_kernel(const FusionPlan& plan, const Schedule& schedule, const std::string& workload_key,
                         const EmitOptions& options) {
  schedule::check_legal(plan, schedule);
  return KernelEmitter(plan, schedule, workload_key, options).emit();
}

}  // namespace comfuse::codegen
