// resident_finish: the finish's queue, its ready words and the row loop around the finish kernel's row code.
#include "codegen/resident_finish.h"

#include "codegen/epilogue_emitter.h"
#include "codegen/finish_kernel.h"
#include "support/error.h"

namespace comfuse::codegen {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// The warps of a CTA that draw from the queue: the producer warpgroup's three idle warps and every consumer
// warp.
int drawing_warps(const schedule::Schedule& s) {
  return 3 + 4 * s.consumer_warpgroups();
}

}  // namespace

std::int64_t resident_finish_bytes(std::int64_t m_blocks) {
  return ceil_div(4 * (m_blocks + 1), 16) * 16;
}

void emit_resident_finish_constants(CodeStream& out, const schedule::Schedule& s, std::int64_t offset) {
  COMFUSE_CHECK(s.bm % kResidentItemRows == 0, "resident_finish's items divide a row block");
  // Raises a row block's word takes: one a tile from each consumer warpgroup that wrote a part of its rows
  // (both halves of a cooperative tile; the one warpgroup of a ping-pong tile).
  const std::string raisers = s.warp_roles == schedule::WarpRoles::kPingPong ? "1" : "CONSUMERS";
  out.line("constexpr size_t READY_BYTE = " + std::to_string(offset) +
           ";  // resident_finish: a ready word a row block, then the queue word, in the workspace");
  out.line("constexpr u32 READY_TARGET = N_TILES * " + raisers + ";  // raises a row block's word takes");
  out.line("constexpr int ITEM_ROWS = " + std::to_string(kResidentItemRows) +
           ", M_ITEMS = (M + ITEM_ROWS - 1) / ITEM_ROWS;  // the queue's items of rows");
  out.line("constexpr u32 DRAWING_WARPS = " + std::to_string(drawing_warps(s)) +
           ";  // a CTA's warps that draw items: the producer warpgroup's last three, every consumer warp");
}

void emit_resident_finish_helpers(CodeStream& out) {
  out.raw(
      R"CUDA(// resident_finish: a row block's ready word polled with acquire semantics at GPU scope (its tiles' stash
// and partials, released before their raises, are visible after it), and the raise that releases them: the
// stash's TMA stores, complete by then, are ordered before it across proxies.
__device__ __forceinline__ u32 ready_poll(const u32* p) { u32 v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
// Named barriers 6 and 7: the 128 threads of consumer warpgroup 0 or 1, before a raise.
__device__ __forceinline__ void ready_sync(int consumer) { asm volatile("bar.sync %0, 128;" :: "r"(6 + consumer) : "memory"); }
__device__ __forceinline__ void ready_raise(u32* p) {
  asm volatile("fence.proxy.async.global;" ::: "memory");
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(p) : "memory");
}
// A row of `bytes` asked of L1 (of L2 past 4 KB, which L1 beside the main kernel's shared memory cannot
// hold for three warps), a line a lane: one warp a row keeps few loads in flight, so the row it takes next
// is fetched while it works on this one.
__device__ __forceinline__ void prefetch_row(const void* row, int bytes, int lane) {
  for (int b = lane * 128; b < bytes; b += 32 * 128) {
    if (bytes <= 4096) asm volatile("prefetch.global.L1 [%0];" :: "l"((const char*)row + b));
    else asm volatile("prefetch.global.L2 [%0];" :: "l"((const char*)row + b));
  }
}
// The queue's next item for the calling lane; the launch's last draw (every item and one past the end for
// each drawing warp) zeroes the queue for the next launch.
__device__ __forceinline__ u32 draw_item(u32* queue) {
  const u32 item = atomicAdd(queue, 1u);
  if (item == M_ITEMS + gridDim.x * DRAWING_WARPS - 1) atomicExch(queue, 0u);
  return item;
}

)CUDA");
}

void emit_finish_rows_lambda(CodeStream& out, const schedule::FusionPlan& plan, const schedule::Schedule& s,
                             const std::map<const te::TensorNode*, std::string>& param_names) {
  const schedule::Schedule finish = finish_schedule(s);  // outlives `rows`, which keeps a reference
  const EpilogueEmitter rows(plan, finish, param_names, EpilogueEmitter::Walk::kRow);
  out.line(
      "// resident_finish: the calling warp draws items of ITEM_ROWS rows until the queue is spent; each "
      "waits");
  out.line(
      "// for its row block's tiles, then runs the finish kernel's row code on its rows (a warp a row).");
  out.open("const auto finish_rows = [&]()");
  out.line("const int lane = threadIdx.x & 31;");
  out.line("u32* const ready_words = (u32*)((unsigned char*)stash + READY_BYTE);");
  out.line("u32* const queue = ready_words + M_BLOCKS;");
  out.line("const float* const parts = (const float*)((const unsigned char*)stash + PARTS_BYTE);");
  // A row's stash of every carried tile, and with the wide finish its partials (side by side), prefetched.
  const int carried = static_cast<int>(plan.carried_tiles.size());
  out.open("const auto prefetch_rows = [&](int row)");
  out.open("for (int c = 0; c < " + std::to_string(carried) + "; ++c)");
  out.line("prefetch_row(&stash[((size_t)c * M + row) * N], N * (int)sizeof(stash[0]), lane);");
  out.close();
  if (s.wide_finish)
    out.line("prefetch_row(&parts[(size_t)row * XSLOTS * N_TILES], XSLOTS * N_TILES * 4, lane);");
  out.close(";");
  out.line("u32 item = __shfl_sync(0xffffffffu, lane == 0 ? draw_item(queue) : 0u, 0);");
  out.open("while (item < M_ITEMS)");
  out.line("// The next item is drawn before this one runs, so that the draw's latency hides under it.");
  out.line("const u32 next = lane == 0 ? draw_item(queue) : 0u;");
  out.line("const int block = (int)(item * ITEM_ROWS / BM);");
  out.open("if (lane == 0)");
  out.line("while (ready_poll(&ready_words[block]) < READY_TARGET) __nanosleep(512);");
  out.line("// Each item passes the word once more; the block's last zeroes it for the next launch.");
  out.line(
      "const u32 items = (u32)min(M_ITEMS, (block + 1) * (BM / ITEM_ROWS)) - (u32)block * (BM / ITEM_ROWS);");
  out.line(
      "if (atomicAdd(&ready_words[block], 1u) == READY_TARGET + items - 1) atomicExch(&ready_words[block], "
      "0u);");
  out.close();
  out.line("__syncwarp();");
  out.line("prefetch_rows((int)item * ITEM_ROWS);");
  out.open("for (int r = 0; r < ITEM_ROWS; ++r)");
  out.line("const int row = (int)item * ITEM_ROWS + r;");
  out.line("if (row >= M) break;");
  out.line("if (r + 1 < ITEM_ROWS && row + 1 < M) prefetch_rows(row + 1);  // the item's rows are ready");
  out.line("const bool row_writer = lane == 0;  // writes row-value outputs");
  out.line("(void)row_writer;");
  rows.finish_row(out);
  out.close();
  out.line("item = __shfl_sync(0xffffffffu, next, 0);");
  out.close();
  out.close(";");
}

void emit_tile_ready(CodeStream& out, const schedule::Schedule& s, const std::string& block) {
  out.line("// resident_finish: this warpgroup's part of row block " + block +
           " (its stash and partials) is complete: raise the block's word.");
  out.line("ready_sync(consumer);  // every thread's writes of the tile come before the raise");
  out.open("if ((threadIdx.x & 127) == 0)");
  if (s.tma_store)
    out.line("bulk_wait_all();  // the tile's TMA stores, issued by this thread, have written");
  out.line("ready_raise(&ready_words[" + block + "]);");
  out.close();
}

}  // namespace comfuse::codegen
