// Measuring in a supervised worker process: a candidate that faults (and so poisons its CUDA context),
// traps, hangs, runs out of memory or crashes the process ends only its worker, never the tuning run.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "search/measurer.h"

namespace comfuse::search {

/// The code that runs inside a worker process: it owns the device there.
class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  virtual runtime::DeviceFingerprint target() = 0;
  /// Measures the kernel compiled into `image` (a cubin) under `schedule`. After a failure that leaves the
  /// device unusable, set `*unusable`: the worker then exits and a fresh one takes over.
  virtual Measurement run(const schedule::Schedule& schedule, const std::string& image, int repeats,
                          bool* unusable) = 0;
  /// The same for a fused back-to-back kernel. Runners of single-GEMM workloads answer kLaunchError.
  virtual Measurement run_b2b(const schedule::B2BSchedule& schedule, const std::string& image, int repeats,
                              bool* unusable);
  virtual std::optional<double> gemm_alone_us(int repeats) = 0;
};

/// Builds the runner inside each new worker process (after the fork: the device is first touched there).
using RunnerFactory = std::function<std::unique_ptr<CandidateRunner>()>;

struct IsolationOptions {
  /// A candidate whose answer takes longer (check and timing included) is killed and recorded `timeout`.
  double candidate_timeout_s = 30;
  /// How long a new worker may take to create its context and say it is ready.
  double startup_timeout_s = 120;
};

/// A Measurer whose every measurement runs in a worker process. The constructor forks a small supervisor
/// process that never touches the device; it forks a worker, waits for it, reports how it ended and forks
/// the next. Messages travel over one SOCK_SEQPACKET socket, each a whole JSON document, tagged with the
/// request it answers. A worker that does not answer in time is killed (SIGKILL). The supervisor and the
/// worker die with the tuning process (PR_SET_PDEATHSIG). Construct it before the process initialises CUDA:
/// a forked child cannot use a CUDA driver its parent initialised.
class IsolatedMeasurer : public Measurer {
 public:
  explicit IsolatedMeasurer(RunnerFactory factory, IsolationOptions options = {});
  ~IsolatedMeasurer() override;
  IsolatedMeasurer(const IsolatedMeasurer&) = delete;
  IsolatedMeasurer& operator=(const IsolatedMeasurer&) = delete;

  runtime::DeviceFingerprint target() override;
  Measurement measure(const MeasureRequest& request) override;
  std::optional<double> gemm_alone_us(int repeats) override;

  /// Workers started so far (1 + the respawns after failures).
  int workers_started() const { return workers_started_; }

 private:
  struct Reply;
  void ensure_ready();
  Reply call(const std::string& request, double timeout_s);

  IsolationOptions options_;
  int socket_ = -1;
  pid_t supervisor_ = -1;
  pid_t worker_ = -1;
  bool ready_ = false;
  int workers_started_ = 0;
  std::uint64_t next_id_ = 1;
  std::optional<runtime::DeviceFingerprint> target_;
  std::string scratch_dir_;  // the cubin handed to the worker lives here
};

}  // namespace comfuse::search
