// The phase trace: what a traced kernel adds to its source (and nothing else), that it compiles, and the
// decoding and summary of a trace buffer laid out as the device writes it.
#include "codegen/phase_trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "codegen/fused_kernel.h"
#include "codegen/kernel_source.h"
#include "codegen/test_programs.h"
#include "codegen/trace_cases.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

using test_programs::kKey;
using trace_cases::cases;
using trace_cases::TracedCase;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Whether `small`'s lines appear in `big` in the same order (with others between).
bool is_subsequence(const std::vector<std::string>& small, const std::vector<std::string>& big) {
  std::size_t i = 0;
  for (const std::string& line : big) {
    if (i < small.size() && line == small[i]) ++i;
  }
  return i == small.size();
}

int count_of(const std::string& text, const std::string& what) {
  int count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

TEST(PhaseTrace, OffByDefaultAndAddsNothing) {
  for (const TracedCase& c : cases()) {
    const KernelSource plain = emit_kernel(c.plan, c.schedule, kKey);
    EXPECT_EQ(plain.source, emit_kernel(c.plan, c.schedule, kKey, EmitOptions{}).source) << c.what;
    EXPECT_EQ(plain.trace_capacity, 0) << c.what;
    EXPECT_EQ(plain.source.find("trace"), std::string::npos) << c.what;
    for (const KernelParam& p : plain.params) EXPECT_NE(p.kind, KernelParam::Kind::kTrace) << c.what;
  }
}

EmitOptions traced() {
  EmitOptions options;
  options.phase_trace = true;
  return options;
}

TEST(PhaseTrace, MarksEveryPhaseAndOnlyAddsLines) {
  for (const TracedCase& c : cases()) {
    const KernelSource plain = emit_kernel(c.plan, c.schedule, kKey);
    const KernelSource kernel = emit_kernel(c.plan, c.schedule, kKey, traced());
    // The parameter lists end in the trace's buffer; every other line of the plain kernel is there, in order.
    std::string source = kernel.source;
    for (std::size_t at; (at = source.find(",\n    u64* __restrict__ trace_buf)")) != std::string::npos;)
      source.replace(at, std::string(",\n    u64* __restrict__ trace_buf)").size(), ")");
    EXPECT_TRUE(is_subsequence(lines_of(plain.source), lines_of(source))) << c.what;
    EXPECT_GE(kernel.trace_capacity, 32) << c.what;
    EXPECT_EQ(kernel.params.back().kind, KernelParam::Kind::kTrace) << c.what;
    EXPECT_EQ(kernel.params.size(), plain.params.size() + 1) << c.what;
    EXPECT_EQ(count_of(kernel.source, "// trace: "), static_cast<int>(c.events.size())) << c.what;
    for (const std::string& event : c.events)
      EXPECT_EQ(count_of(kernel.source, "// trace: " + event + "\n"), 1) << c.what << ": " << event;
    // Each warpgroup writes its end stamp once: the producer before it returns, a consumer after its loops.
    EXPECT_EQ(count_of(kernel.source, "trace_slot[1] = trace_global_ns();"), 2) << c.what;
    // The finish kernel takes the same parameters, the trace's among them.
    if (!kernel.finish_name.empty()) {
      EXPECT_EQ(count_of(kernel.source, "u64* __restrict__ trace_buf"), 2) << c.what;
    }
  }
}

TEST(PhaseTrace, TracedKernelsCompileWithoutNewSpills) {
  for (const TracedCase& c : cases()) {
    const KernelSource plain = emit_kernel(c.plan, c.schedule, kKey);
    const KernelSource kernel = emit_kernel(c.plan, c.schedule, kKey, traced());
    const runtime::CompiledProgram compiled = compile_kernel_source(kernel);
    const runtime::CompiledProgram reference = compile_kernel_source(plain);
    ASSERT_TRUE(compiled.kernels.count(kernel.name)) << c.what;
    const runtime::ResourceUsage& usage = compiled.kernels.at(kernel.name);
    EXPECT_LE(usage.spill_store_bytes, reference.kernels.at(plain.name).spill_store_bytes)
        << c.what << ": the trace must not make the kernel spill (" << usage.registers << " registers)";
  }
}

// A trace buffer as the device writes it (layout in phase_trace.h).
class Buffer {
 public:
  Buffer(int ctas, int warpgroups, int capacity)
      : warpgroups_(warpgroups),
        capacity_(capacity),
        words_(static_cast<std::size_t>(ctas) * warpgroups * (kTraceHeaderWords + 2 * capacity)) {}

  void start(int cta, int wg, std::uint64_t ns, std::uint64_t clock) {
    slot(cta, wg)[0] = ns;
    slot(cta, wg)[3] = clock;
  }
  void mark(int cta, int wg, std::uint64_t clock, TraceEvent event, int stage = 0, int m_block = 0,
            int n_tile = 0) {
    std::uint64_t* w = slot(cta, wg);
    const auto n = static_cast<int>(w[2] & 0xFFFFFFFF);
    if (n < capacity_) {
      w[kTraceHeaderWords + 2 * n] = clock;
      w[kTraceHeaderWords + 2 * n + 1] = static_cast<std::uint64_t>(event) | std::uint64_t(stage) << 8 |
                                         std::uint64_t(n_tile & 0xFFFFFF) << 16 |
                                         std::uint64_t(m_block) << 40;
    }
    w[2] = (w[2] & ~0xFFFFFFFFull) | static_cast<std::uint64_t>(n + 1);
  }
  void end(int cta, int wg, std::uint64_t ns, int sm, std::uint64_t clock) {
    slot(cta, wg)[1] = ns;
    slot(cta, wg)[4] = clock;
    slot(cta, wg)[2] = (slot(cta, wg)[2] & 0xFFFFFFFF) | static_cast<std::uint64_t>(sm) << 32;
  }
  std::uint64_t* slot(int cta, int wg) {
    return words_.data() +
           (static_cast<std::size_t>(cta) * warpgroups_ + wg) * (kTraceHeaderWords + 2 * capacity_);
  }
  const std::vector<std::uint64_t>& words() const { return words_; }

 private:
  int warpgroups_, capacity_;
  std::vector<std::uint64_t> words_;
};

// One CTA, a producer and two ping-pong consumers: consumer 1 runs mainloops [100, 200) and [400, 500),
// consumer 2 [200, 300); each epilogue takes 150 cycles after its mainloop.
Buffer ping_pong_buffer() {
  Buffer b(1, 3, 16);
  for (int wg = 0; wg < 3; ++wg) b.start(0, wg, 5000 + 10 * wg, 50);
  b.mark(0, 0, 60, TraceEvent::kProducerTileBegin, 0, 0, 0);
  b.mark(0, 0, 90, TraceEvent::kProducerTileEnd, 0, 0, 0);
  b.mark(0, 0, 100, TraceEvent::kProducerTileBegin, 0, 1, 0);
  b.mark(0, 0, 190, TraceEvent::kProducerTileEnd, 0, 1, 0);
  for (const auto& [wg, begin, tile] :
       {std::tuple{1, 100, 0}, std::tuple{2, 200, 1}, std::tuple{1, 400, 2}}) {
    b.mark(0, wg, begin, TraceEvent::kMainloopBegin, 0, tile, 0);
    b.mark(0, wg, begin + 100, TraceEvent::kMainloopEnd, 0, tile, 0);
    b.mark(0, wg, begin + 250, TraceEvent::kElementsEnd, 0, tile, 0);
  }
  // Each warpgroup ends 800 cycles after its start, 4000, 4090 and 4180 ns after it.
  for (int wg = 0; wg < 3; ++wg) b.end(0, wg, 9000 + 100 * wg, 7, 850);
  return b;
}

TEST(PhaseTrace, DecodesTheDeviceLayout) {
  const Buffer b = ping_pong_buffer();
  const std::vector<TraceSlot> slots = decode_trace(b.words(), 1, 3, 16);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[2].warpgroup, 2);
  EXPECT_EQ(slots[2].sm, 7);
  EXPECT_EQ(slots[2].start_ns, 5020u);
  EXPECT_EQ(slots[2].end_ns, 9200u);
  EXPECT_EQ(slots[2].end_clock, 850u);
  EXPECT_EQ(slots[1].written, 6);
  ASSERT_EQ(slots[1].records.size(), 6u);
  EXPECT_EQ(slots[1].records[3].clock, 400u);
  EXPECT_EQ(slots[1].records[3].event, TraceEvent::kMainloopBegin);
  EXPECT_EQ(slots[1].records[3].m_block, 2);
  EXPECT_EQ(slots[1].records[5].event, TraceEvent::kElementsEnd);
}

TEST(PhaseTrace, SummaryOfAPingPongTimeline) {
  const TraceSummary summary = summarize_trace(decode_trace(ping_pong_buffer().words(), 1, 3, 16));
  EXPECT_EQ(summary.ctas, 1);
  EXPECT_EQ(summary.truncated_slots, 0);
  // The CTA's records run from 60 to 650; mainloops cover [100, 300) and [400, 500): 300 of 590 cycles.
  EXPECT_DOUBLE_EQ(summary.median_cta_cycles, 590);
  EXPECT_DOUBLE_EQ(summary.mainloop_share, 300.0 / 590.0);
  EXPECT_DOUBLE_EQ(summary.median_mainloop_cycles, 100);
  EXPECT_DOUBLE_EQ(summary.start_skew_ns, 20);
  EXPECT_DOUBLE_EQ(summary.end_skew_ns, 200);
  EXPECT_DOUBLE_EQ(summary.clock_mhz, 1000.0 * 2400 / (4000 + 4090 + 4180));
  // Consumers: 3 mainloops (300 cycles), 3 epilogues of 150 (450), and consumer 1's wait of 50 between its
  // first tile's epilogue (ends at 350) and its second mainloop; their spans sum to 550 + 250 = 800.
  ASSERT_EQ(summary.consumers.size(), 3u);
  EXPECT_EQ(summary.consumers[0].from, "mainloop end");
  EXPECT_EQ(summary.consumers[0].to, "stage 0 elements");
  EXPECT_EQ(summary.consumers[0].count, 3);
  EXPECT_DOUBLE_EQ(summary.consumers[0].median_cycles, 150);
  EXPECT_DOUBLE_EQ(summary.consumers[0].share, 450.0 / 800.0);
  EXPECT_EQ(summary.consumers[1].from, "mainloop begin");
  EXPECT_DOUBLE_EQ(summary.consumers[1].total_cycles, 300);
  EXPECT_EQ(summary.consumers[2].from, "stage 0 elements");
  EXPECT_EQ(summary.consumers[2].to, "mainloop begin");
  EXPECT_DOUBLE_EQ(summary.consumers[2].total_cycles, 50);
  // Producer: loads of 30 and 90 cycles, 10 between; its span is 130.
  ASSERT_EQ(summary.producer.size(), 2u);
  EXPECT_EQ(summary.producer[0].from, "loads begin");
  EXPECT_DOUBLE_EQ(summary.producer[0].median_cycles, 60);
  EXPECT_DOUBLE_EQ(summary.producer[0].share, 120.0 / 130.0);
  TraceSummary at_1ghz = summary;
  at_1ghz.clock_mhz = 1000;
  const std::string table = format_trace_summary(at_1ghz);
  EXPECT_NE(table.find("mainloops cover 51% of a CTA's span"), std::string::npos) << table;
  EXPECT_NE(table.find("  mainloop end           stage 0 elements              3        0.150"),
            std::string::npos)
      << table;
}

TEST(PhaseTrace, RecordsPastTheCapacityAreCountedAsTruncation) {
  Buffer b(1, 2, 2);
  for (int wg = 0; wg < 2; ++wg) b.start(0, wg, 100, 0);
  for (int i = 0; i < 3; ++i) b.mark(0, 1, 10 * (i + 1), TraceEvent::kMainloopBegin);
  b.mark(0, 0, 5, TraceEvent::kProducerTileBegin);
  for (int wg = 0; wg < 2; ++wg) b.end(0, wg, 200, 0, 100);
  const std::vector<TraceSlot> slots = decode_trace(b.words(), 1, 2, 2);
  EXPECT_EQ(slots[1].written, 3);
  EXPECT_EQ(slots[1].records.size(), 2u);
  EXPECT_EQ(summarize_trace(slots).truncated_slots, 1);
}

std::string decode_error(const std::vector<std::uint64_t>& words, int ctas, int warpgroups, int capacity) {
  try {
    decode_trace(words, ctas, warpgroups, capacity);
  } catch (const InternalError& error) {
    return error.what();
  }
  return "no error";
}

TEST(PhaseTrace, RefusesABufferTheKernelDidNotWrite) {
  Buffer unfinished = ping_pong_buffer();
  unfinished.slot(0, 2)[1] = 0;
  EXPECT_NE(decode_error(unfinished.words(), 1, 3, 16).find("CTA 0, warpgroup 2 has no end stamp"),
            std::string::npos);
  Buffer unknown = ping_pong_buffer();
  unknown.slot(0, 1)[kTraceHeaderWords + 1] = 0x2A;
  EXPECT_NE(decode_error(unknown.words(), 1, 3, 16).find("warpgroup 1, record 0: unknown event code 42"),
            std::string::npos);
  Buffer backwards = ping_pong_buffer();
  backwards.slot(0, 1)[kTraceHeaderWords + 2] = 10;  // record 1 before record 0
  EXPECT_NE(decode_error(backwards.words(), 1, 3, 16).find("warpgroup 1, record 1: clock 10 is before"),
            std::string::npos);
  Buffer empty(1, 2, 4);
  for (int wg = 0; wg < 2; ++wg) {
    empty.start(0, wg, 1, 1);
    empty.end(0, wg, 2, 0, 1);
  }
  EXPECT_THROW(summarize_trace(decode_trace(empty.words(), 1, 2, 4)), CompileError);
}

}  // namespace
}  // namespace comfuse::codegen
