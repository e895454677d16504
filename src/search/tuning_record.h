// One measured candidate of the tuning log v1 (DESIGN.md "Tuning log v1") and its strict JSON form.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/fingerprint.h"
#include "schedule/b2b_schedule.h"
#include "schedule/schedule.h"
#include "te/program.h"

namespace comfuse::search {

/// The log schema version this comfuse writes and the newest it reads.
inline constexpr int kLogVersion = 1;

/// What happened to a candidate.
enum class RecordStatus : std::uint8_t {
  kOk,
  kCompileError,
  kLaunchError,
  kWrongAnswer,
  kTimeout,
  kCrash,
};

/// "ok", "compile_error", "launch_error", "wrong_answer", "timeout", "crash".
std::string_view status_name(RecordStatus status);
/// The inverse of status_name; std::nullopt for any other text.
std::optional<RecordStatus> parse_status(std::string_view name);

struct Workload {
  std::string key;      // te::workload_key(program)
  te::Program program;  // the program as tuned
};

struct CompilerInfo {
  std::string comfuse;               // comfuse::kVersion of the tuner
  std::vector<std::string> options;  // NVRTC options the candidate was compiled with
};

/// One line of the tuning log.
struct TuningRecord {
  /// A record of `workload`; every other field starts empty (a te::Program has no empty state, so a record
  /// cannot be default-constructed).
  explicit TuningRecord(Workload workload_in) : workload(std::move(workload_in)) {}

  int v = kLogVersion;
  Workload workload;
  runtime::DeviceFingerprint target;
  CompilerInfo compiler;
  schedule::Schedule schedule;  // of a fused-GEMM kernel; unused when `b2b` is set
  /// Set for a fused back-to-back kernel of the whole program (its JSON "schedule" has "kernel": "b2b").
  std::optional<schedule::B2BSchedule> b2b;
  RecordStatus status = RecordStatus::kOk;
  std::string error;                // empty for ok records
  std::vector<double> times_us;     // the samples; may be empty (failed candidates)
  std::optional<double> median_us;  // JSON null exactly when times_us is empty
  std::string source_sha256;        // sha256_hex of the generated source (64 lowercase hex digits)
  std::string timestamp;            // ISO 8601, UTC ("2025-01-31T12:00:00Z")
};

/// The record of one measured (or failed) candidate of `workload`: `status` and `error` as given (an ok
/// status without samples becomes kLaunchError), the median of `times`, the SHA-256 of `source` and the
/// current UTC time. The caller sets the schedule (`schedule` or `b2b`).
TuningRecord candidate_record(Workload workload, const runtime::DeviceFingerprint& target,
                              CompilerInfo compiler, RecordStatus status, const std::string& error,
                              std::vector<double> times, const std::string& source);

/// The record's schedule in words (schedule::to_string of the fused-GEMM or the back-to-back schedule).
std::string schedule_description(const TuningRecord& record);

/// The canonical JSON text of the record's schedule (fused-GEMM or back-to-back): its identity in a log.
std::string schedule_text(const TuningRecord& record);

/// The record as JSON with keys sorted: `record_to_json(r).dump()` is its canonical log line.
nlohmann::json record_to_json(const TuningRecord& record);

/// Parses a record strictly. Unknown or missing fields, wrong JSON types, non-finite or negative times, a
/// median that is null while there are times (or the reverse), a malformed source_sha256 or timestamp, and a
/// workload key that is not te::workload_key of the program are CompileErrors starting with the JSON path
/// under `path` (bare field names when `path` is empty): `workload.key: ... is not the key of
/// workload.program (...)`. A version above kLogVersion is refused with
/// `log version 2 is newer than this comfuse (1): upgrade comfuse`.
TuningRecord record_from_json(const nlohmann::json& json, const std::string& path = "");

/// The current time as ISO 8601 UTC with seconds ("2025-01-31T12:00:00Z").
std::string utc_timestamp();

}  // namespace comfuse::search
