// Epilogue inputs staged in shared memory by the producer (schedule knob tma_inputs): each tile's 16-bit
// inputs read per element (a residual) or per column (bias, gamma) are loaded with TMA into one of two
// shared-memory slots while the tile's operands stream, so that the epilogue reads them from shared memory
// instead of waiting on global loads after the mainloop.
//
// Protocol, per tile c of the CTA's sequence (the producer's and the consumers' tile counter): slot c & 1,
// phase (c >> 1) & 1. The producer waits for the slot's `in_empty` (the tile two before released it), arms
// `in_full` with the slot's bytes and issues one TMA box per input and 64 columns. A consumer warpgroup waits
// on `in_full` after its mainloop and, once its last stage has read the tile, each of its warps arrives on
// `in_empty`. With one_input_slot (a deferred reduction, whose one stage reads them, or row reductions in the
// kernel whose first stage alone reads them and releases the slot before the exchange) there is one slot, and
// the producer loads a tile's inputs after its operands, so that waiting for the tile before to release the
// slot (`in_empty[0]`, phase c & 1) never holds back the operands of the other warpgroup's mainloop. Its
// `in_full` still alternates, barrier c & 1 at phase (c >> 1) & 1: when a consumer waits for tile c, the
// slot's landings may stand at tile c - 1 (not landed), c (landing) or past c (landed, c + 1 loading), three
// states that one barrier's parity cannot tell apart; barrier c & 1 stands at tile c (landed or not), since
// tile c - 2 released the slot before tile c - 1 could load and tile c + 2 cannot load before c releases it.
//
// With resident_vectors (one column tile a CTA), the per-column vectors are not in the slots: the producer
// loads them once, before its first tile, into their own region `sVec` ahead of the slots, on the barrier
// `vec_full`, which each consumer warpgroup waits on once before its first tile.
//
// Layout of a slot: each staged input in 64-column boxes with the 128-byte swizzle of the operand tiles
// (a box of R rows is R lines of 128 bytes; 16-byte piece p of line L sits at piece p ^ (L & 7)), every input
// 1024-byte aligned. A vector [N] is one row.
#pragma once

#include <string>
#include <vector>

#include "codegen/code_stream.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"

namespace comfuse::codegen {

/// A bit of a tile counter, or a constant: how the staged-input protocol picks a tile's slot, barrier and
/// phase, emitted as a C expression of the counter and evaluated as a number by the protocol's model check.
struct TileBit {
  int constant = -1;  // 0 or 1; -1: bit `shift` of the counter
  int shift = 0;

  static TileBit zero() { return {0, 0}; }
  static TileBit bit(int shift) { return {-1, shift}; }
  std::string of(const std::string& tile) const;
  int of(std::int64_t tile) const;
};

/// Tile c's part in the protocol. The producer waits until in_empty[slot(c)] has completed the phase before
/// `empty_phase(c)`, arms in_full[full_barrier(c)] and loads into slot(c); the tile's consumers wait until
/// that barrier has completed phase `full_phase(c)`, read the slot and arrive on in_empty[slot(c)], which
/// completes phase `empty_phase(c)`. A wait on parity P passes once the phase of parity P before the current
/// one has completed, so each wait must find its barrier at most one phase away from the one it names.
struct StagedProtocol {
  TileBit slot, full_barrier, full_phase, empty_phase;
  bool loads_after_operands = false;  // the producer issues them after the tile's operands
};

class StagedInputs {
 public:
  /// The staged inputs of `plan` under `schedule` (none without tma_inputs).
  StagedInputs(const schedule::FusionPlan& plan, const schedule::Schedule& schedule);

  bool empty() const { return inputs_.empty(); }
  /// Whether `input` is read from its slot.
  bool staged(const te::Tensor& input) const;
  /// Fragment element i of a staged input (in the element loop: i, h, local_row0 and lane in scope), as a
  /// float expression (0 out of bounds; `interior`: the tile lies inside the matrix, no test).
  std::string read(const te::Tensor& input, schedule::Broadcast broadcast, bool interior) const;
  /// The same at an even element i: its pair with element i + 1 as one 32-bit word (staged_pairs; 0 out of
  /// bounds: N is even, so a pair lies inside the matrix or outside it whole).
  std::string read_pair(const te::Tensor& input, schedule::Broadcast broadcast, bool interior) const;
  /// The shared address of a staged input's pair at fragment element i (i even: its element and the next),
  /// in the slot in hand (`in_tile`).
  std::string address(const te::Tensor& input, schedule::Broadcast broadcast) const;

  /// The rows of each input's box: BM for element-wise inputs, 1 for vectors (the launch's TMA maps).
  std::vector<std::pair<te::Tensor, int>> boxes() const;

  /// Bytes from a slot's start to `input`'s boxes (it must be staged).
  std::int64_t offset_of(const te::Tensor& input) const;
  /// `lds_u16`, the staged reads' load (`lds_u32` with staged_pairs, and `sts_u32` where the output is stored
  /// in place).
  void helpers(CodeStream& out) const;
  /// The slots from `start` on (`sIn`; a pointer expression: the end of the operand ring, or of the TMA-store
  /// staging tiles; after the resident vectors' `sVec` where there are any), their layout constants and
  /// their barriers; the ring's barriers follow `barriers_end()`.
  void carve(CodeStream& out, const std::string& start) const;
  /// The address after the staged inputs' barriers, as a `u64*` expression.
  std::string barriers_end() const;
  void init_barriers(CodeStream& out, const std::string& readers) const;
  /// Whether the producer's loads carry streaming_hints' evict_first policy (element-wise inputs staged):
  /// the kernel then needs emit_streaming_helpers.
  bool streams_loads() const;
  /// Whether the producer loads a tile's inputs after its operands (one slot) rather than before them.
  bool loads_after_operands() const { return protocol().loads_after_operands; }
  /// The protocol the producer's and consumers' code follows (the emitted expressions come from it).
  StagedProtocol protocol() const;
  /// The producer's one load of the resident vectors (nothing without them), at the CTA's one column tile
  /// (`tiles.n_tile(0)`, where `tiles.count > 0`), before its first tile; and the consumers' one wait for
  /// them under the same condition, before their first tile.
  void produce_resident(CodeStream& out) const;
  void wait_resident(CodeStream& out) const;
  /// The producer's loads of tile `tile` (its counter) at row block `m_block` and column tile `n_tile`.
  void produce(CodeStream& out, const std::string& tile, const std::string& m_block,
               const std::string& n_tile) const;
  /// Consumer side: the per-input pointers and the slot variable; the wait after the mainloop of tile
  /// `tile`; the release after the tile's last read.
  void declare(CodeStream& out) const;
  void wait(CodeStream& out, const std::string& tile) const;
  void release(CodeStream& out) const;

 private:
  struct Input {
    te::Tensor tensor;
    schedule::Broadcast broadcast;
    int rows;             // of each box
    std::int64_t offset;  // bytes from the slot's start (from sVec's, resident)
    bool resident;        // a per-column vector loaded once (resident_vectors)
  };

  const schedule::Schedule& schedule_;
  int slots_;  // 2; 1 with one_input_slot
  std::vector<Input> inputs_;
  std::int64_t slot_bytes_ = 0;                              // with alignment
  std::int64_t tx_bytes_ = 0;                                // the boxes TMA writes, per tile
  std::int64_t resident_bytes_ = 0, resident_tx_bytes_ = 0;  // the resident vectors' region, and their boxes
};

}  // namespace comfuse::codegen
