// One measured candidate of the tuning log v1 and its strict JSON form.
#include "search/tuning_record.h"

#include <cmath>
#include <ctime>
#include <set>

#include "runtime/kernel_timer.h"
#include "support/error.h"
#include "support/sha256.h"
#include "te/json.h"

namespace comfuse::search {
namespace {

using nlohmann::json;

std::string join(const std::string& path, const std::string& field) {
  return path.empty() ? field : path + "." + field;
}

void check_fields(const json& j, const std::string& path, const std::set<std::string>& known) {
  if (!j.is_object()) throw CompileError((path.empty() ? "record" : path) + ": expected an object");
  for (const auto& [key, value] : j.items()) {
    if (!known.contains(key)) throw CompileError(join(path, key) + ": unknown field");
  }
  for (const auto& key : known) {
    if (!j.contains(key)) throw CompileError(join(path, key) + ": missing");
  }
}

std::string read_string(const json& j, const std::string& path, const std::string& key) {
  const json& value = j.at(key);
  if (!value.is_string()) throw CompileError(join(path, key) + ": expected a string");
  return value.get<std::string>();
}

double read_time(const json& value, const std::string& where) {
  if (!value.is_number()) throw CompileError(where + ": expected a number");
  const double time = value.get<double>();
  if (!std::isfinite(time) || time < 0) throw CompileError(where + ": expected a finite time >= 0");
  return time;
}

bool is_lower_hex(const std::string& text, std::size_t digits) {
  if (text.size() != digits) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "YYYY-MM-DDTHH:MM:SS" with an optional fraction, then "Z" or "+HH:MM"/"-HH:MM".
bool is_iso8601(const std::string& text) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd";
  if (text.size() < shape.size() + 1) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (shape[i] == 'd' ? !digit : text[i] != shape[i]) return false;
  }
  std::size_t i = shape.size();
  if (text[i] == '.') {
    ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == start) return false;
  }
  const std::string zone = text.substr(i);
  if (zone == "Z") return true;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && digit(zone[1]) && digit(zone[2]) &&
         zone[3] == ':' && digit(zone[4]) && digit(zone[5]);
}

}  // namespace

std::string_view status_name(RecordStatus status) {
  switch (status) {
    case RecordStatus::kOk:
      return "ok";
    case RecordStatus::kCompileError:
      return "compile_error";
    case RecordStatus::kLaunchError:
      return "launch_error";
    case RecordStatus::kWrongAnswer:
      return "wrong_answer";
    case RecordStatus::kTimeout:
      return "timeout";
    case RecordStatus::kCrash:
      return "crash";
  }
  return "unknown";
}

std::optional<RecordStatus> parse_status(std::string_view name) {
  for (RecordStatus status : {RecordStatus::kOk, RecordStatus::kCompileError, RecordStatus::kLaunchError,
                              RecordStatus::kWrongAnswer, RecordStatus::kTimeout, RecordStatus::kCrash}) {
    if (status_name(status) == name) return status;
  }
  return std::nullopt;
}

TuningRecord candidate_record(Workload workload, const runtime::DeviceFingerprint& target,
                              CompilerInfo compiler, RecordStatus status, const std::string& error,
                              std::vector<double> times, const std::string& source) {
  TuningRecord r(std::move(workload));
  r.target = target;
  r.compiler = std::move(compiler);
  r.status = status;
  r.error = status == RecordStatus::kOk ? "" : (error.empty() ? std::string(status_name(status)) : error);
  if (status == RecordStatus::kOk && times.empty()) {
    r.status = RecordStatus::kLaunchError;
    r.error = "the measurer returned no samples";
  }
  if (!times.empty()) r.median_us = runtime::summarize(times).median_us;
  r.times_us = std::move(times);
  r.source_sha256 = sha256_hex(source);
  r.timestamp = utc_timestamp();
  return r;
}

std::string schedule_description(const TuningRecord& record) {
  return record.b2b ? schedule::to_string(*record.b2b) : schedule::to_string(record.schedule);
}

std::string schedule_text(const TuningRecord& record) {
  return (record.b2b ? schedule::to_json(*record.b2b) : schedule::to_json(record.schedule)).dump();
}

json record_to_json(const TuningRecord& record) {
  json times = json::array();
  for (double t : record.times_us) times.push_back(t);
  return json{
      {"v", record.v},
      {"workload", {{"key", record.workload.key}, {"program", te::program_to_json(record.workload.program)}}},
      {"target", runtime::fingerprint_to_json(record.target)},
      {"compiler", {{"comfuse", record.compiler.comfuse}, {"options", record.compiler.options}}},
      {"schedule", record.b2b ? schedule::to_json(*record.b2b) : schedule::to_json(record.schedule)},
      {"status", std::string(status_name(record.status))},
      {"error", record.error},
      {"times_us", times},
      {"median_us", record.median_us ? json(*record.median_us) : json(nullptr)},
      {"source_sha256", record.source_sha256},
      {"timestamp", record.timestamp}};
}

TuningRecord record_from_json(const json& j, const std::string& path) {
  if (!j.is_object()) throw CompileError((path.empty() ? "record" : path) + ": expected an object");
  // The version first: a newer record may have fields this comfuse does not know.
  if (!j.contains("v")) throw CompileError(join(path, "v") + ": missing");
  const json& v = j.at("v");
  if (!v.is_number_integer()) throw CompileError(join(path, "v") + ": expected an integer");
  if (v.is_number_unsigned() ? v.get<std::uint64_t>() > kLogVersion : v.get<std::int64_t>() > kLogVersion) {
    throw CompileError("log version " + v.dump() + " is newer than this comfuse (" +
                       std::to_string(kLogVersion) + "): upgrade comfuse");
  }
  if (v.get<std::int64_t>() < 1) throw CompileError(join(path, "v") + ": unknown log version " + v.dump());
  check_fields(j, path,
               {"v", "workload", "target", "compiler", "schedule", "status", "error", "times_us", "median_us",
                "source_sha256", "timestamp"});
  const std::string workload_path = join(path, "workload");
  const json& workload = j.at("workload");
  check_fields(workload, workload_path, {"key", "program"});
  const std::string recorded_key = read_string(workload, workload_path, "key");
  te::Program program = te::program_from_json(workload.at("program"), join(workload_path, "program"));
  if (const std::string key = te::workload_key(program); key != recorded_key) {
    throw CompileError(join(workload_path, "key") + ": '" + recorded_key + "' is not the key of " +
                       join(workload_path, "program") + " ('" + key + "')");
  }
  TuningRecord record(Workload{recorded_key, std::move(program)});
  record.v = static_cast<int>(v.get<std::int64_t>());

  record.target = runtime::fingerprint_from_json(j.at("target"), join(path, "target"));

  const std::string compiler_path = join(path, "compiler");
  const json& compiler = j.at("compiler");
  check_fields(compiler, compiler_path, {"comfuse", "options"});
  record.compiler.comfuse = read_string(compiler, compiler_path, "comfuse");
  const json& options = compiler.at("options");
  if (!options.is_array()) throw CompileError(join(compiler_path, "options") + ": expected an array");
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (!options[i].is_string()) {
      throw CompileError(join(compiler_path, "options") + "[" + std::to_string(i) + "]: expected a string");
    }
    record.compiler.options.push_back(options[i].get<std::string>());
  }

  if (schedule::is_b2b_schedule_json(j.at("schedule"))) {
    record.b2b = schedule::b2b_schedule_from_json(j.at("schedule"), join(path, "schedule"));
  } else {
    record.schedule = schedule::schedule_from_json(j.at("schedule"), join(path, "schedule"));
  }

  const std::string status = read_string(j, path, "status");
  const auto parsed_status = parse_status(status);
  if (!parsed_status) throw CompileError(join(path, "status") + ": unknown value '" + status + "'");
  record.status = *parsed_status;
  record.error = read_string(j, path, "error");

  const json& times = j.at("times_us");
  if (!times.is_array()) throw CompileError(join(path, "times_us") + ": expected an array");
  for (std::size_t i = 0; i < times.size(); ++i) {
    record.times_us.push_back(read_time(times[i], join(path, "times_us") + "[" + std::to_string(i) + "]"));
  }
  const json& median = j.at("median_us");
  if (!median.is_null()) record.median_us = read_time(median, join(path, "median_us"));
  if (record.times_us.empty() && record.median_us) {
    throw CompileError(join(path, "median_us") + ": expected null when times_us is empty");
  }
  if (!record.times_us.empty() && !record.median_us) {
    throw CompileError(join(path, "median_us") + ": missing for " + std::to_string(record.times_us.size()) +
                       " times");
  }

  record.source_sha256 = read_string(j, path, "source_sha256");
  if (!is_lower_hex(record.source_sha256, 64)) {
    throw CompileError(join(path, "source_sha256") + ": expected 64 lowercase hex digits");
  }
  record.timestamp = read_string(j, path, "timestamp");
  if (!is_iso8601(record.timestamp)) {
    throw CompileError(join(path, "timestamp") + ": expected ISO 8601 (\"2025-01-31T12:00:00Z\"), got '" +
                       record.timestamp + "'");
  }
  return record;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace comfuse::search
