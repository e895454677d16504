// The phase trace: its device side as emitted text, and the decoding of what it wrote.
#include "codegen/phase_trace.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "support/error.h"

namespace comfuse::codegen {
namespace {

constexpr int kLastEvent = static_cast<int>(TraceEvent::kExchangeSent);

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

std::string slot_name(int cta, int warpgroup) {
  return "trace slot of CTA " + std::to_string(cta) + ", warpgroup " + std::to_string(warpgroup);
}

// Phases between consecutive records of the warpgroups of one kind, largest total first; `span` sums their
// first-to-last record times.
std::vector<PhaseStats> phases_of(const std::vector<const TraceSlot*>& slots) {
  std::map<std::pair<std::string, std::string>, std::vector<double>> gaps;
  double span = 0;
  for (const TraceSlot* slot : slots) {
    const auto& r = slot->records;
    if (r.size() < 2) continue;
    span += static_cast<double>(r.back().clock - r.front().clock);
    for (std::size_t i = 1; i < r.size(); ++i) {
      gaps[{event_name(r[i - 1].event, r[i - 1].stage), event_name(r[i].event, r[i].stage)}].push_back(
          static_cast<double>(r[i].clock - r[i - 1].clock));
    }
  }
  std::vector<PhaseStats> stats;
  for (auto& [names, values] : gaps) {
    PhaseStats s;
    s.from = names.first;
    s.to = names.second;
    s.count = static_cast<std::int64_t>(values.size());
    for (double v : values) s.total_cycles += v;
    s.median_cycles = median_of(std::move(values));
    s.share = span > 0 ? s.total_cycles / span : 0;
    stats.push_back(std::move(s));
  }
  std::stable_sort(stats.begin(), stats.end(),
                   [](const PhaseStats& a, const PhaseStats& b) { return a.total_cycles > b.total_cycles; });
  return stats;
}

// The fraction of [first, last] covered by the union of `intervals`.
double covered_share(std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals, std::uint64_t first,
                     std::uint64_t last) {
  if (last <= first || intervals.empty()) return 0;
  std::sort(intervals.begin(), intervals.end());
  std::uint64_t covered = 0, reach = first;
  for (const auto& [begin, end] : intervals) {
    const std::uint64_t from = std::max(begin, reach);
    if (end > from) {
      covered += end - from;
      reach = end;
    }
  }
  return static_cast<double>(covered) / static_cast<double>(last - first);
}

}  // namespace

std::string event_name(TraceEvent event, int stage) {
  const std::string s = "stage " + std::to_string(stage);
  switch (event) {
    case TraceEvent::kProducerTileBegin:
      return "loads begin";
    case TraceEvent::kProducerTileEnd:
      return "loads issued";
    case TraceEvent::kMainloopBegin:
      return "mainloop begin";
    case TraceEvent::kMainloopEnd:
      return "mainloop end";
    case TraceEvent::kElementsEnd:
      return s + " elements";
    case TraceEvent::kCombined:
      return s + " combined";
    case TraceEvent::kStoreIssued:
      return "store issued";
    case TraceEvent::kFirstStageReady:
      return "first stage ready";
    case TraceEvent::kInputsReady:
      return "inputs ready";
    case TraceEvent::kExchangeSent:
      return s + " sent";
  }
  return "event " + std::to_string(static_cast<int>(event));
}

std::int64_t PhaseTrace::buffer_bytes(std::int64_t ctas, int warpgroups) const {
  if (!enabled_) return 0;
  return ctas * warpgroups * (kTraceHeaderWords + 2LL * capacity_) * 8;
}

void PhaseTrace::helpers(CodeStream& out) const {
  if (!enabled_) return;
  out.line(
      "// Phase trace: one slot a (CTA, warpgroup) of TRACE_HEADER words, then TRACE_CAPACITY records of");
  out.line("// (%clock64, event | stage << 8 | n_tile << 16 | m_block << 40); records past the capacity are");
  out.line("// counted, not kept.");
  out.line("constexpr int TRACE_HEADER = " + std::to_string(kTraceHeaderWords) +
           ", TRACE_CAPACITY = " + std::to_string(capacity_) + ";");
  out.raw(R"CUDA(__device__ __forceinline__ u64 trace_clock() {
  u64 c; asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) :: "memory"); return c;
}
__device__ __forceinline__ u64 trace_global_ns() {
  u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory"); return t;
}
__device__ __forceinline__ void trace_mark(u64* slot, int& n, u32 code, int m_block, int n_tile) {
  if (n < TRACE_CAPACITY) {
    slot[TRACE_HEADER + 2 * n] = trace_clock();
    slot[TRACE_HEADER + 2 * n + 1] = (u64)code | ((u64)(n_tile & 0xFFFFFF) << 16) | ((u64)(u32)m_block << 40);
  }
  ++n;
}
)CUDA");
  out.line();
}

std::string PhaseTrace::parameter() const {
  return enabled_ ? ",\n    u64* __restrict__ trace_buf" : "";
}

void PhaseTrace::begin(CodeStream& out, const std::string& warpgroups) const {
  if (!enabled_) return;
  out.line("// Phase trace: this warpgroup's slot, written by its first thread.");
  out.line("u64* const trace_slot = trace_buf + (size_t)(blockIdx.x * " + warpgroups +
           " + warpgroup) * (TRACE_HEADER + 2 * TRACE_CAPACITY);");
  out.line("const bool trace_leader = (threadIdx.x & 127) == 0;");
  out.line("int trace_n = 0;");
  out.line("if (trace_leader) { trace_slot[0] = trace_global_ns(); trace_slot[3] = trace_clock(); }");
}

void PhaseTrace::mark(CodeStream& out, TraceEvent event, int stage, const std::string& m_block,
                      const std::string& n_tile, const std::string& when) const {
  if (!enabled_) return;
  const int code = static_cast<int>(event) | stage << 8;
  out.line("if (trace_leader" + (when.empty() ? std::string() : " && " + when) +
           ") trace_mark(trace_slot, trace_n, " + std::to_string(code) + "u, " + m_block + ", " + n_tile +
           ");  // trace: " + event_name(event, stage));
}

void PhaseTrace::end(CodeStream& out) const {
  if (!enabled_) return;
  out.open("if (trace_leader)");
  out.line("u32 sm;");
  out.line(R"(asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));)");
  out.line("trace_slot[1] = trace_global_ns();");
  out.line("trace_slot[2] = (u64)(u32)trace_n | ((u64)sm << 32);");
  out.line("trace_slot[4] = trace_clock();");
  out.close();
}

std::vector<TraceSlot> decode_trace(const std::vector<std::uint64_t>& words, int ctas, int warpgroups,
                                    int capacity) {
  const std::size_t slot_words = kTraceHeaderWords + 2 * static_cast<std::size_t>(capacity);
  COMFUSE_CHECK(words.size() >= static_cast<std::size_t>(ctas) * warpgroups * slot_words,
                "the trace buffer holds every slot of the launch");
  std::vector<TraceSlot> slots;
  for (int cta = 0; cta < ctas; ++cta) {
    for (int wg = 0; wg < warpgroups; ++wg) {
      const std::uint64_t* w = words.data() + (static_cast<std::size_t>(cta) * warpgroups + wg) * slot_words;
      TraceSlot slot;
      slot.cta = cta;
      slot.warpgroup = wg;
      slot.start_ns = w[0];
      slot.end_ns = w[1];
      slot.written = static_cast<std::int64_t>(w[2] & 0xFFFFFFFFu);
      slot.sm = static_cast<int>(w[2] >> 32);
      slot.start_clock = w[3];
      slot.end_clock = w[4];
      if (slot.end_ns == 0 || slot.end_ns < slot.start_ns || slot.end_clock < slot.start_clock) {
        throw InternalError(slot_name(cta, wg) + " has no end stamp (start " + std::to_string(slot.start_ns) +
                            " ns, end " + std::to_string(slot.end_ns) +
                            " ns): the warpgroup did not finish, or the launch had fewer CTAs");
      }
      const std::int64_t kept = std::min<std::int64_t>(slot.written, capacity);
      std::uint64_t previous = slot.start_clock;
      // (the end stamp is checked after the records: the one after the last)
      for (std::int64_t n = 0; n < kept; ++n) {
        const std::uint64_t clock = w[kTraceHeaderWords + 2 * n];
        const std::uint64_t info = w[kTraceHeaderWords + 2 * n + 1];
        const int code = static_cast<int>(info & 0xFF);
        if (code < 1 || code > kLastEvent) {
          throw InternalError(slot_name(cta, wg) + ", record " + std::to_string(n) + ": unknown event code " +
                              std::to_string(code));
        }
        if (clock < previous) {
          throw InternalError(slot_name(cta, wg) + ", record " + std::to_string(n) + ": clock " +
                              std::to_string(clock) + " is before the one before it (" +
                              std::to_string(previous) + ")");
        }
        previous = clock;
        slot.records.push_back({clock, static_cast<TraceEvent>(code), static_cast<int>((info >> 8) & 0xFF),
                                static_cast<int>(info >> 40), static_cast<int>((info >> 16) & 0xFFFFFF)});
      }
      if (slot.end_clock < previous) {
        throw InternalError(slot_name(cta, wg) + ": its end clock " + std::to_string(slot.end_clock) +
                            " is before its last record's (" + std::to_string(previous) + ")");
      }
      slots.push_back(std::move(slot));
    }
  }
  return slots;
}

TraceSummary summarize_trace(const std::vector<TraceSlot>& slots) {
  TraceSummary summary;
  std::vector<const TraceSlot*> producers, consumers;
  std::map<int, std::vector<const TraceSlot*>> by_cta;
  std::uint64_t first_start = ~0ULL, last_start = 0, first_end = ~0ULL, last_end = 0;
  double cycles = 0, ns = 0;
  for (const TraceSlot& slot : slots) {
    cycles += static_cast<double>(slot.end_clock - slot.start_clock);
    ns += static_cast<double>(slot.end_ns - slot.start_ns);
    if (slot.written > static_cast<std::int64_t>(slot.records.size())) ++summary.truncated_slots;
    first_start = std::min(first_start, slot.start_ns);
    last_start = std::max(last_start, slot.start_ns);
    first_end = std::min(first_end, slot.end_ns);
    last_end = std::max(last_end, slot.end_ns);
    if (slot.records.empty()) continue;
    (slot.warpgroup == 0 ? producers : consumers).push_back(&slot);
    by_cta[slot.cta].push_back(&slot);
  }
  if (by_cta.empty()) throw CompileError("the phase trace has no records: did the kernel run any tile?");
  summary.ctas = static_cast<int>(by_cta.size());
  summary.clock_mhz = ns > 0 ? 1000 * cycles / ns : 0;
  summary.start_skew_ns = static_cast<double>(last_start - first_start);
  summary.end_skew_ns = static_cast<double>(last_end - first_end);

  std::vector<double> cta_cycles, mainloops;
  double share_sum = 0;
  for (const auto& [cta, members] : by_cta) {
    std::uint64_t first = ~0ULL, last = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;
    for (const TraceSlot* slot : members) {
      first = std::min(first, slot->records.front().clock);
      last = std::max(last, slot->records.back().clock);
      const TraceRecord* begin = nullptr;
      for (const TraceRecord& r : slot->records) {
        if (r.event == TraceEvent::kMainloopBegin) begin = &r;
        if (r.event == TraceEvent::kMainloopEnd && begin != nullptr) {
          busy.emplace_back(begin->clock, r.clock);
          mainloops.push_back(static_cast<double>(r.clock - begin->clock));
          begin = nullptr;
        }
      }
    }
    cta_cycles.push_back(static_cast<double>(last - first));
    share_sum += covered_share(std::move(busy), first, last);
  }
  summary.median_cta_cycles = median_of(std::move(cta_cycles));
  summary.mainloop_share = share_sum / static_cast<double>(by_cta.size());
  summary.median_mainloop_cycles = median_of(std::move(mainloops));
  summary.producer = phases_of(producers);
  summary.consumers = phases_of(consumers);
  return summary;
}

std::string format_trace_summary(const TraceSummary& summary) {
  COMFUSE_CHECK(summary.clock_mhz > 0, "a trace summary knows the clock it ran at");
  std::string text;
  char line[256];
  const auto us = [&](double cycles) { return cycles / summary.clock_mhz; };
  std::snprintf(line, sizeof(line),
                "CTAs %d, span %.1f us (median), mainloops cover %.0f%% of a CTA's span, a tile's mainloop "
                "%.2f us\n",
                summary.ctas, us(summary.median_cta_cycles), 100 * summary.mainloop_share,
                us(summary.median_mainloop_cycles));
  text += line;
  std::snprintf(line, sizeof(line),
                "SM clock %.0f MHz, start skew %.1f us, end skew %.1f us (globaltimer)%s\n",
                summary.clock_mhz, summary.start_skew_ns / 1000, summary.end_skew_ns / 1000,
                summary.truncated_slots > 0
                    ? (", " + std::to_string(summary.truncated_slots) + " slots truncated").c_str()
                    : "");
  text += line;
  const auto table = [&](const char* title, const std::vector<PhaseStats>& phases) {
    text += std::string(title) + "\n";
    std::snprintf(line, sizeof(line), "  %-22s %-22s %8s %12s %8s\n", "from", "to", "count", "median us",
                  "share");
    text += line;
    for (const PhaseStats& p : phases) {
      std::snprintf(line, sizeof(line), "  %-22s %-22s %8lld %12.3f %7.1f%%\n", p.from.c_str(), p.to.c_str(),
                    static_cast<long long>(p.count), us(p.median_cycles), 100 * p.share);
      text += line;
    }
  };
  table("consumer warpgroups", summary.consumers);
  table("producer", summary.producer);
  return text;
}

}  // namespace comfuse::codegen
