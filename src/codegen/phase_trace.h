// The phase trace of a fused kernel: timestamps that one thread of each warpgroup writes at the boundaries of
// its phases (the producer's loads of a tile; a consumer's mainloop, element loops, row combines and stores),
// and their decoding into where a warpgroup's time goes and how much of a CTA's time its tensor cores had
// work. A diagnostic that an emit option turns on, never part of a schedule: a traced kernel's source differs
// from the logged one, and kernels emitted without it are unchanged.
//
// Buffer layout, in 64-bit words: one slot a (CTA, warpgroup), warpgroup 0 the producer, slot index
// cta * warpgroups + warpgroup, each of kTraceHeaderWords + 2 * capacity words:
//   header: [0] %globaltimer at the warpgroup's start (ns), [1] %globaltimer at its end, [2] records written
//           (low 32 bits; may exceed the capacity: the excess was dropped) | SM id << 32, [3] %clock64 at
//           start, [4] %clock64 at end
//   record n: [h + 2n] %clock64, [h + 2n + 1] event | stage << 8 | n_tile << 16 (24 bits) | m_block << 40
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/code_stream.h"

namespace comfuse::codegen {

enum class TraceEvent : std::uint8_t {
  kProducerTileBegin = 1,  // the producer starts a tile: before its first wait for a free stage
  kProducerTileEnd = 2,    // the producer has issued the tile's last operand load
  kMainloopBegin = 3,      // a consumer warpgroup starts a tile's mainloop (after a ping-pong turn's wait)
  kMainloopEnd = 4,        // the tile's accumulator is complete
  kElementsEnd = 5,        // a stage's element loop over the tile is done (the record's stage)
  kCombined = 6,         // a stage's row reductions are combined over whole rows (quad, warpgroups, cluster)
  kStoreIssued = 7,      // the tile's TMA store is issued
  kFirstStageReady = 8,  // a consumer's wait for the tile's first operand stage is over
  kInputsReady = 9,      // the tile's staged epilogue inputs (tma_inputs) have landed
  kExchangeSent = 10,    // a stage's row partials are sent to the cluster's peers; its wait for theirs begins
};

/// A name for reports: "mainloop end", "stage 1 combined".
std::string event_name(TraceEvent event, int stage);

constexpr int kTraceHeaderWords = 5;
/// n_tile of a record that belongs to a whole row block (the combines of an in-kernel reduction).
constexpr int kTraceRowBlock = 0xFFFFFF;

/// Emits the device side of the trace into a kernel (every method emits nothing when disabled).
class PhaseTrace {
 public:
  /// `capacity`: records a slot holds.
  PhaseTrace(bool enabled, int capacity) : enabled_(enabled), capacity_(capacity) {}

  bool enabled() const { return enabled_; }
  int capacity() const { return capacity_; }
  /// Bytes of the buffer for `ctas` CTAs of `warpgroups` warpgroups each.
  std::int64_t buffer_bytes(std::int64_t ctas, int warpgroups) const;

  /// The device functions and constants, at file scope.
  void helpers(CodeStream& out) const;
  /// The kernel parameter, with its leading comma and line break.
  std::string parameter() const;
  /// The warpgroup's slot and counter, and its start stamps; expects `warpgroup` (0: the producer) in scope.
  void begin(CodeStream& out, const std::string& warpgroups) const;
  /// One record; `m_block` and `n_tile` are expressions in scope (kTraceRowBlock for a whole row block),
  /// `when` a further condition (none when empty).
  void mark(CodeStream& out, TraceEvent event, int stage, const std::string& m_block,
            const std::string& n_tile, const std::string& when = {}) const;
  /// The warpgroup's end stamp and record count.
  void end(CodeStream& out) const;

 private:
  bool enabled_;
  int capacity_;
};

struct TraceRecord {
  std::uint64_t clock = 0;
  TraceEvent event = TraceEvent::kMainloopBegin;
  int stage = 0;
  int m_block = 0;
  int n_tile = 0;  // kTraceRowBlock: the whole row block
};

struct TraceSlot {
  int cta = 0;
  int warpgroup = 0;  // 0: the producer
  int sm = 0;
  std::uint64_t start_ns = 0, end_ns = 0;        // %globaltimer, comparable across SMs
  std::uint64_t start_clock = 0, end_clock = 0;  // %clock64 of this SM
  std::int64_t written = 0;                      // records the warpgroup wrote, kept or not
  std::vector<TraceRecord> records;              // the kept ones, in order
};

/// Decodes a trace buffer of `ctas` CTAs x `warpgroups` slots of `capacity` records. Throws InternalError
/// naming the slot (and the record) for a slot its warpgroup never finished (no end stamp), an unknown event
/// code and a clock that runs backwards: the buffer is not what the traced kernel writes.
std::vector<TraceSlot> decode_trace(const std::vector<std::uint64_t>& words, int ctas, int warpgroups,
                                    int capacity);

/// The time between two consecutive records of a warpgroup, gathered over every warpgroup of a kind.
struct PhaseStats {
  std::string from, to;  // event names
  std::int64_t count = 0;
  double median_cycles = 0;
  double total_cycles = 0;
  double share = 0;  // of the summed spans of the warpgroups of this kind
};

struct TraceSummary {
  int ctas = 0;
  std::int64_t truncated_slots = 0;   // slots whose records outgrew the capacity (their tails are missing)
  double median_cta_cycles = 0;       // first to last record of a CTA, median over CTAs
  double clock_mhz = 0;               // the SMs' clock while the kernel ran: cycles over globaltimer ns
  double start_skew_ns = 0;           // latest warpgroup start minus earliest (globaltimer)
  double end_skew_ns = 0;             // latest end minus earliest end
  double mainloop_share = 0;          // of a CTA's span, covered by some consumer's mainloop (mean over CTAs)
  double median_mainloop_cycles = 0;  // a tile's mainloop, begin to end
  std::vector<PhaseStats> producer;   // by total time, largest first
  std::vector<PhaseStats> consumers;
};

/// Per-phase statistics of decoded slots. Throws CompileError when no slot has a record.
TraceSummary summarize_trace(const std::vector<TraceSlot>& slots);

/// The summary as a table, cycles as microseconds at the clock the trace measured.
std::string format_trace_summary(const TraceSummary& summary);

}  // namespace comfuse::codegen
