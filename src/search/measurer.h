// What the tuner asks of a measuring backend: one candidate at a time, each failure a status, never a crash.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/fingerprint.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/b2b_schedule.h"
#include "schedule/schedule.h"
#include "search/tuning_record.h"

namespace comfuse::search {

/// One candidate to measure: the schedule (the backend regenerates the launch configuration from it) and
/// the compiled kernel.
struct MeasureRequest {
  schedule::Schedule schedule;
  const runtime::CompiledProgram* compiled = nullptr;
  int repeats = 30;  // timed runs; each gives one sample
  // Set: the candidate is the fused back-to-back kernel under this schedule (`schedule` unused).
  std::optional<schedule::B2BSchedule> b2b;
};

/// What measuring one candidate gave. `status` is kOk with samples, or the failure with `error` set.
struct Measurement {
  RecordStatus status = RecordStatus::kOk;
  std::string error;
  std::vector<double> times_us;
  double max_rel_error = 0;  // of the checked output against the reference
};

/// A measuring backend. Implementations own the device (or simulate one).
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// The device the measurements run on.
  virtual runtime::DeviceFingerprint target() = 0;
  /// Checks the candidate's output against the reference, then times it. A candidate's own failure (launch
  /// error, fault, wrong answer, hang, crash) is the returned status; throws only when the backend itself
  /// cannot go on (no device).
  virtual Measurement measure(const MeasureRequest& request) = 0;
  /// The anchor GEMM alone with cuBLAS on the same operands (median µs), or nullopt where the backend has
  /// none.
  virtual std::optional<double> gemm_alone_us(int repeats) = 0;
};

}  // namespace comfuse::search
