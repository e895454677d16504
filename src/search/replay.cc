// Replay: the best record of a tuning log for a program and a target, regenerated and checked as a kernel.
#include "search/replay.h"

#include <optional>

#include "codegen/b2b_emitter.h"
#include "comfuse/version.h"
#include "schedule/fusion_plan.h"
#include "search/selection.h"
#include "support/error.h"
#include "support/sha256.h"
#include "te/json.h"

namespace comfuse::search {
namespace {

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

// The release part of a version string: "0.1.0+abc1234" -> "0.1.0". Builds of one release differ in their
// commit; a change in the code they generate is caught by the source hash instead.
std::string release_of(const std::string& version) {
  return version.substr(0, version.find('+'));
}

// The first field that keeps `record` from replaying on `target` with this comfuse, as a message.
std::optional<std::string> first_mismatch(const TuningRecord& record,
                                          const runtime::DeviceFingerprint& target) {
  const runtime::DeviceFingerprint& log = record.target;
  auto differs = [](const std::string& field, const std::string& log_value, const std::string& here,
                    const std::string& what) {
    return field + " differs: log has " + log_value + ", this " + what + " is " + here;
  };
  const std::string log_cc = std::to_string(log.cc_major) + "." + std::to_string(log.cc_minor);
  const std::string here_cc = std::to_string(target.cc_major) + "." + std::to_string(target.cc_minor);
  if (log.name != target.name)
    return differs("target.name", quoted(log.name), quoted(target.name), "machine");
  if (log.arch != target.arch)
    return differs("target.arch", quoted(log.arch), quoted(target.arch), "machine");
  if (log_cc != here_cc) return differs("target.cc", quoted(log_cc), quoted(here_cc), "machine");
  if (log.sms != target.sms) {
    return differs("target.sms", std::to_string(log.sms), std::to_string(target.sms), "machine");
  }
  if (log.driver != target.driver) {
    return differs("target.driver", quoted(log.driver), quoted(target.driver), "machine");
  }
  if (log.cuda != target.cuda)
    return differs("target.cuda", quoted(log.cuda), quoted(target.cuda), "machine");
  if (log.nvrtc != target.nvrtc) {
    return differs("target.nvrtc", quoted(log.nvrtc), quoted(target.nvrtc), "machine");
  }
  if (release_of(record.compiler.comfuse) != release_of(kVersion)) {
    return differs("compiler.comfuse", quoted(record.compiler.comfuse), quoted(kVersion), "comfuse");
  }
  return std::nullopt;
}

}  // namespace

codegen::KernelSource regenerate(const TuningRecord& record, const te::Program& program) {
  const std::string& key = record.workload.key;
  return record.b2b ? codegen::emit_b2b_kernel(schedule::plan_b2b(program), *record.b2b, key)
                    : codegen::emit_kernel(schedule::plan_fusion(program), record.schedule, key);
}

ReplayResult replay(const std::vector<TuningRecord>& records, const te::Program& program,
                    const runtime::DeviceFingerprint& target, const ReplayOptions& options) {
  const std::string key = te::workload_key(program);
  std::vector<const TuningRecord*> matching, any;
  std::size_t for_key = 0;
  for (const TuningRecord& record : records) {
    if (record.workload.key != key) continue;
    ++for_key;
    if (record.status != RecordStatus::kOk || !record.median_us) continue;
    any.push_back(&record);
    if (!first_mismatch(record, target)) matching.push_back(&record);
  }
  const TuningRecord* best_matching = select_best(matching);
  const TuningRecord* best_any = select_best(any);
  if (for_key == 0) throw CompileError("no record for workload " + key + " in the tuning log");
  if (best_any == nullptr) {
    throw CompileError("no ok record for workload " + key + " in the tuning log (" + std::to_string(for_key) +
                       " records, none ok)");
  }
  const TuningRecord* chosen = best_matching;
  if (chosen == nullptr) {
    if (!options.allow_target_mismatch) throw CompileError(*first_mismatch(*best_any, target));
    chosen = best_any;
  }

  codegen::KernelSource kernel = regenerate(*chosen, program);
  if (const std::string sha = sha256_hex(kernel.source); sha != chosen->source_sha256) {
    throw CompileError("the generated source differs from the log's: comfuse changed? (log " +
                       chosen->source_sha256 + ", now " + sha + ")");
  }
  return ReplayResult{*chosen, std::move(kernel)};
}

}  // namespace comfuse::search
