// The schedule of a fused back-to-back kernel: its knobs, their legality against a B2B plan, the space the
// tuner searches and the JSON form a tuning record carries.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/b2b_plan.h"

namespace comfuse::schedule {

struct B2BSchedule {
  int stages = 4;  // W1 boxes in flight (X is loaded once per CTA); W2 chunks are double-buffered
  // GEMM1 of the next chunk and GEMM2 of this one in flight while the next chunk's tiles between run (two
  // acc1 and operand buffers); off: each chunk's GEMMs are waited for before its tiles between.
  bool overlap = false;
  int bm = 128;  // rows per CTA: one consumer warpgroup (64; two CTAs share an SM) or two (128)
  int bn1 = 64;  // chained columns per chunk (GEMM1's N, GEMM2's K step): 64 or 128
  // The two consumer warpgroups take turns on the tensor cores (bm=128, without overlap): one's tiles between
  // run while the other's GEMMs do; a turn issues GEMM2 of the last chunk and GEMM1 of the next.
  bool pingpong = false;
  // CTAs that stay resident and walk row blocks (one or two an SM): the next block's X and first W1 boxes
  // load, and the two-deep X buffer lets them, while this block computes and stores.
  bool persistent = false;
  // Where GEMM2's operand (the tiles between, packed to 16 bits) lives: in registers, the A fragment of a
  // register-A wgmma (no round trip, 4 registers a k16 step); or in shared memory, written in the swizzled
  // layout of a shared-A wgmma (16 KB a 128 x 128 chunk, two with overlap), which frees those registers.
  bool operand_in_shared = false;
  // How GEMM2's epilogue leaves: each thread stores its column pairs to global memory (direct); or
  // (persistent grids) the warpgroup writes its 64 x O tile into its rows of the block's X buffer (free once
  // the block's GEMM1s are done, same swizzled layout) and one thread stores it with TMA in 64 x 64 boxes
  // (whole lines, async).
  bool tma_store = false;
  bool operator==(const B2BSchedule&) const = default;
};

/// Shared memory the kernel asks for: X's row block (two when persistent), the W1 ring, W2's two chunk
/// buffers, GEMM2's operand when it lives there (two with overlap), the barriers and the 1024-byte slack.
std::int64_t b2b_shared_bytes(const B2BPlan& plan, const B2BSchedule& schedule);

/// Throws CompileError naming the knob when `schedule` cannot run `plan`: bm or bn1 not 64 or 128, bm=64
/// with O above 128 (two CTAs share an SM, 128 registers a thread), overlap of 128-column chunks with an
/// online softmax at O above 64 and the operand in registers (spills), pingpong without two consumer
/// warpgroups or with overlap, stages outside [2, 6], fewer stages than GEMM1 has K blocks of 64 (a chunk's
/// W1 boxes stay in the ring until its GEMM1 completes), more shared memory than a CTA has, or the TMA store
/// without the persistent grid (the only grid it was verified with), where the program has more than one
/// output or one that is not 16-bit, where O is not a multiple of 8 (TMA
/// row pitch) or above the X buffer's 64-column boxes, or where a batched program's rows are not a multiple
/// of 64 (a box would reach into the next batch).
void check_legal(const B2BPlan& plan, const B2BSchedule& schedule);

/// Every legal schedule of `plan`, in canonical order (operand in registers or shared memory, persistent, bm,
/// bn1, stages, then one chunk at a time, overlapped, ping-pong), then the persistent ones again with the TMA
/// store.
std::vector<B2BSchedule> b2b_schedule_space(const B2BPlan& plan);

/// {"kernel": "b2b", "bm": …, "bn1": …, "operand": "registers" | "shared", "overlap": …, "persistent": …,
/// "pingpong": …, "stages": …, "store": "direct" | "tma"}: the "kernel" field tells it from a fused-GEMM
/// schedule. bm, bn1, operand, persistent, pingpong and store may be absent (records older than the knobs):
/// 128, 64, registers, false, false, direct. "store" is written only when it is "tma", so that the records of
/// direct-store kernels read as they did before the knob.
nlohmann::json to_json(const B2BSchedule& schedule);
/// Whether `json` is the JSON of a B2BSchedule (its "kernel" field says so).
bool is_b2b_schedule_json(const nlohmann::json& json);
/// Parses strictly: unknown or missing fields and wrong types are CompileErrors with the JSON path.
B2BSchedule b2b_schedule_from_json(const nlohmann::json& json, const std::string& path = "schedule");
std::string to_string(const B2BSchedule& schedule);

}  // namespace comfuse::schedule
