// Kernel timing from CUPTI activity records: warm-up, L2 flush between timed runs, all samples kept.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/context.h"

namespace comfuse::runtime {

/// One kernel execution as CUPTI recorded it (times on the GPU's clock, in nanoseconds).
struct KernelRecord {
  std::string name;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;
  /// The tag that KernelActivity::push_tag set around the launch; 0 when none was.
  std::uint64_t tag = 0;

  double duration_us() const { return static_cast<double>(end_ns - start_ns) / 1000.0; }
};

/// While alive, CUPTI records every kernel the process runs (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which
/// keeps kernels concurrent). CUPTI's activity buffers are process-wide, so at most one KernelActivity exists
/// at a time; a second is an InternalError. CUPTI failures are RuntimeError naming the CUPTI call.
class KernelActivity {
 public:
  KernelActivity();
  ~KernelActivity();
  KernelActivity(const KernelActivity&) = delete;
  KernelActivity& operator=(const KernelActivity&) = delete;

  /// Tags the kernels this thread launches until pop_tag() (CUPTI external correlation). `tag` is not 0.
  void push_tag(std::uint64_t tag);
  void pop_tag();
  /// Flushes CUPTI's buffers and returns the kernel records completed since the last call, ordered by start.
  /// Synchronise first: records of kernels still running arrive in a later call. Dropped records (CUPTI ran
  /// out of buffers) are a RuntimeError.
  std::vector<KernelRecord> collect();
};

/// How KernelTimer::measure runs.
struct TimingOptions {
  /// Untimed runs first (module load, clocks, caches).
  int warmup = 10;
  /// Timed runs; each gives one sample.
  int repeats = 100;
  /// Overwrite a buffer of twice the L2 size before every run so that no run finds its inputs in L2.
  bool flush_l2 = true;
  /// What a sample is: the CUPTI durations of the run's kernels, or the interval between CUDA events
  /// recorded before and after the run, which also counts launch latency and gaps between kernels (for runs
  /// under a profiler, which holds CUPTI itself).
  enum class Clock { kCupti, kEvents };
  Clock clock = Clock::kCupti;
};

/// Per-run kernel times, in run order, and their summary.
struct Timing {
  std::vector<double> samples_us;
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  double mean_us = 0;
  /// The sample standard deviation (n - 1); 0 for one sample.
  double stddev_us = 0;
  /// stddev_us / mean_us.
  double cv = 0;
  /// With the CUPTI clock, each kernel of a run on its own: the median over the runs of the run's first
  /// kernel (by start), of its second, ... (a deferred reduction: the main kernel, then the finish kernel).
  /// Empty with the events clock, or when the runs enqueued different numbers of kernels.
  std::vector<double> kernel_median_us;
};

/// The summary of `samples_us` (the median of an even count is the mean of the middle two). Throws
/// InternalError when there are no samples.
Timing summarize(std::vector<double> samples_us);

/// The summary of `repeats` timed runs from their kernels' records, ordered by start: a run's sample is the
/// sum of the durations of the records tagged with its number (1 to repeats; others are ignored), and
/// kernel_median_us the median of each kernel position when every run has the same number of kernels.
/// Untagged records (no external correlation) are split into `repeats` equal runs in start order when they
/// divide evenly. A run without a record is a RuntimeError naming the run.
Timing summarize_runs(const std::vector<KernelRecord>& records, int repeats);

/// Times the kernels a launch function enqueues, by their CUPTI durations (launch overhead and gaps between
/// kernels are not counted, and neither is the L2 flush, which is a memset rather than a kernel and is queued
/// outside the tagged region), or by CUDA events around each run (TimingOptions::clock).
class KernelTimer {
 public:
  /// Times on `stream`; both must outlive the timer. The flush buffer (2x L2) is allocated on first use.
  KernelTimer(const Context& context, const Stream& stream);

  /// Runs `launch(stream)` options.warmup times untimed, then options.repeats times timed. A sample is the
  /// sum of the durations of the kernels one call enqueued (launch must enqueue at least one, from the
  /// calling thread). Non-positive warmup is 0 runs; repeats below 1 is a CompileError naming the value.
  Timing measure(const std::function<void(CUstream)>& launch, const TimingOptions& options = {});

 private:
  void flush_l2();
  Timing measure_with_events(const std::function<void(CUstream)>& launch, const TimingOptions& options);

  const Context* context_;
  const Stream* stream_;
  std::optional<DeviceBuffer> flush_buffer_;
  std::uint8_t flush_value_ = 0;
};

}  // namespace comfuse::runtime
