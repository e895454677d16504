// CUPTI activity buffers, kernel records joined to their tags, and the measurement loop.
#include "runtime/kernel_timer.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "support/error.h"

namespace comfuse::runtime {
namespace {

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kBufferAlignment = 8;

void check(CUptiResult result, const char* api) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  throw RuntimeError(api, static_cast<int>(result), text);
}

// What CUPTI's buffer callbacks deliver; CUPTI calls them from its own threads as well as from flushes.
struct Collector {
  std::mutex mutex;
  std::vector<KernelRecord> kernels;
  std::unordered_map<std::uint32_t, std::uint64_t> tags;  // correlation id -> external id
  std::size_t dropped = 0;
};

// Never destroyed: CUPTI may deliver buffers from its own threads while the process exits.
Collector& collector() {
  static Collector* instance = new Collector;
  return *instance;
}

std::atomic<bool> activity_alive{false};

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t,
                               std::size_t valid_size) {
  Collector& sink = collector();
  std::lock_guard<std::mutex> lock(sink.mutex);
  CUpti_Activity* record = nullptr;
  while (valid_size > 0 && cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      KernelRecord out;
      out.name = kernel->name != nullptr ? kernel->name : "";
      out.start_ns = kernel->start;
      out.end_ns = kernel->end;
      out.correlation_id = kernel->correlationId;
      out.stream_id = kernel->streamId;
      sink.kernels.push_back(std::move(out));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* external = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (external->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
        sink.tags[external->correlationId] = external->externalId;
      }
    }
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
    sink.dropped += dropped;
  std::free(buffer);
}

void register_callbacks() {
  static std::once_flag once;
  static CUptiResult result = CUPTI_SUCCESS;
  std::call_once(once, [] { result = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); });
  check(result, "cuptiActivityRegisterCallbacks");
}

}  // namespace

KernelActivity::KernelActivity() {
  if (activity_alive.exchange(true))
    throw InternalError("internal error: only one KernelActivity may exist at a time");
  try {
    register_callbacks();
    {
      Collector& sink = collector();
      std::lock_guard<std::mutex> lock(sink.mutex);
      sink.kernels.clear();
      sink.tags.clear();
      sink.dropped = 0;
    }
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable");
    CUptiResult result = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    if (result != CUPTI_SUCCESS) {
      cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      check(result, "cuptiActivityEnable");
    }
  } catch (...) {
    activity_alive = false;
    throw;
  }
}

KernelActivity::~KernelActivity() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  activity_alive = false;
}

void KernelActivity::push_tag(std::uint64_t tag) {
  COMFUSE_CHECK(tag != 0, "kernel activity tags are non-zero");
  check(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, tag),
        "cuptiActivityPushExternalCorrelationId");
}

void KernelActivity::pop_tag() {
  std::uint64_t last = 0;
  check(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
        "cuptiActivityPopExternalCorrelationId");
}

std::vector<KernelRecord> KernelActivity::collect() {
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  Collector& sink = collector();
  std::lock_guard<std::mutex> lock(sink.mutex);
  if (sink.dropped > 0) {
    throw RuntimeError("cuptiActivityGetNumDroppedRecords", static_cast<int>(sink.dropped),
                       std::to_string(sink.dropped) + " kernel activity records were dropped");
  }
  std::vector<KernelRecord> records = std::move(sink.kernels);
  sink.kernels.clear();
  for (KernelRecord& record : records) {
    auto tag = sink.tags.find(record.correlation_id);
    if (tag != sink.tags.end()) record.tag = tag->second;
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  return records;
}

Timing summarize(std::vector<double> samples_us) {
  COMFUSE_CHECK(!samples_us.empty(), "a timing needs at least one sample");
  Timing timing;
  timing.samples_us = samples_us;
  std::vector<double> sorted = std::move(samples_us);
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  timing.median_us = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  timing.min_us = sorted.front();
  timing.max_us = sorted.back();
  double sum = 0;
  for (double sample : sorted) sum += sample;
  timing.mean_us = sum / static_cast<double>(n);
  double squares = 0;
  for (double sample : sorted) squares += (sample - timing.mean_us) * (sample - timing.mean_us);
  timing.stddev_us = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0;
  timing.cv = timing.mean_us > 0 ? timing.stddev_us / timing.mean_us : 0.0;
  return timing;
}

Timing summarize_runs(const std::vector<KernelRecord>& records, int repeats) {
  COMFUSE_CHECK(repeats >= 1, "a timing needs at least one run");
  std::vector<std::vector<double>> runs(static_cast<std::size_t>(repeats));  // each run's kernels, by start
  const bool untagged =
      std::all_of(records.begin(), records.end(), [](const KernelRecord& r) { return r.tag == 0; });
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::uint64_t tag = records[i].tag;
    // Without external correlation records, one stream's kernels still run in launch order: group them.
    if (untagged && records.size() % runs.size() == 0) tag = i / (records.size() / runs.size()) + 1;
    if (tag == 0 || tag > runs.size()) continue;
    runs[tag - 1].push_back(records[i].duration_us());
  }
  std::vector<double> samples;
  samples.reserve(runs.size());
  for (std::size_t run = 0; run < runs.size(); ++run) {
    if (runs[run].empty()) {
      throw RuntimeError(
          "cuptiActivityFlushAll", -1,
          "timed run " + std::to_string(run + 1) + " of " + std::to_string(repeats) +
              " has no kernel record (" + std::to_string(records.size()) +
              " records collected); the launch function must enqueue a kernel from this thread");
    }
    samples.push_back(std::accumulate(runs[run].begin(), runs[run].end(), 0.0));
  }
  Timing timing = summarize(std::move(samples));
  const std::size_t kernels = runs.front().size();
  if (std::all_of(runs.begin(), runs.end(), [&](const auto& run) { return run.size() == kernels; })) {
    for (std::size_t k = 0; k < kernels; ++k) {
      std::vector<double> durations;
      durations.reserve(runs.size());
      for (const auto& run : runs) durations.push_back(run[k]);
      timing.kernel_median_us.push_back(summarize(std::move(durations)).median_us);
    }
  }
  return timing;
}

KernelTimer::KernelTimer(const Context& context, const Stream& stream)
    : context_(&context), stream_(&stream) {}

void KernelTimer::flush_l2() {
  if (!flush_buffer_) {
    const auto l2 = static_cast<std::size_t>(context_->attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
    flush_buffer_.emplace(*context_, std::max<std::size_t>(2 * l2, 1u << 20));
  }
  // A different value each time, so no run can find the buffer already holding what it writes.
  ++flush_value_;
  const Driver& driver = context_->driver();
  driver.check(
      driver.api().memset_d8_async(flush_buffer_->get(), flush_value_, flush_buffer_->size(), stream_->get()),
      "cuMemsetD8Async");
}

Timing KernelTimer::measure(const std::function<void(CUstream)>& launch, const TimingOptions& options) {
  if (options.repeats < 1) {
    throw CompileError("timing: repeats=" + std::to_string(options.repeats) + " must be at least 1");
  }
  if (options.clock == TimingOptions::Clock::kEvents) return measure_with_events(launch, options);
  KernelActivity activity;
  for (int run = 0; run < options.warmup; ++run) {
    if (options.flush_l2) flush_l2();
    launch(stream_->get());
  }
  stream_->synchronize();
  activity.collect();

  for (int run = 1; run <= options.repeats; ++run) {
    if (options.flush_l2) flush_l2();
    activity.push_tag(static_cast<std::uint64_t>(run));
    try {
      launch(stream_->get());
    } catch (...) {
      activity.pop_tag();
      throw;
    }
    activity.pop_tag();
  }
  stream_->synchronize();
  return summarize_runs(activity.collect(), options.repeats);
}

Timing KernelTimer::measure_with_events(const std::function<void(CUstream)>& launch,
                                        const TimingOptions& options) {
  for (int run = 0; run < options.warmup; ++run) {
    if (options.flush_l2) flush_l2();
    launch(stream_->get());
  }
  std::vector<std::pair<Event, Event>> marks;
  marks.reserve(static_cast<std::size_t>(options.repeats));
  for (int run = 0; run < options.repeats; ++run) {
    if (options.flush_l2) flush_l2();
    marks.emplace_back(Event(*context_), Event(*context_));
    marks.back().first.record(*stream_);
    launch(stream_->get());
    marks.back().second.record(*stream_);
  }
  stream_->synchronize();
  std::vector<double> samples;
  samples.reserve(marks.size());
  for (const auto& [start, end] : marks) samples.push_back(1000.0 * Event::elapsed_ms(start, end));
  return summarize(std::move(samples));
}

}  // namespace comfuse::runtime
