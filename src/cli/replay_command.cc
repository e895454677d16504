// Implementation of `comfuse replay`.
#include "cli/replay_command.h"

#include <cstdio>
#include <optional>
#include <set>

#include "cli/kernel_files.h"
#include "runtime/driver.h"
#include "runtime/fingerprint.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/b2b_plan.h"
#include "search/b2b_choice.h"
#include "search/replay.h"
#include "search/selection.h"
#include "search/tuning_log.h"
#include "support/error.h"
#include "support/sha256.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

constexpr const char* kUsage =
    "usage: comfuse replay --log FILE WORKLOAD [--shape M=…,K=…,N=…] [--target GPU] "
    "[--allow-target-mismatch]\n"
    "                      [--strict] -o DIR\n";

// The GPU assumed when neither --target nor a local GPU says: the one comfuse targets (DESIGN.md).
constexpr const char* kDefaultTargetName = "NVIDIA H200";

struct ReplayArgs {
  std::string log_path, workload, shape_text, target_name, directory;
  bool allow_target_mismatch = false;
  bool strict = false;
};

// The target a record must match, and a sentence saying where it came from.
struct ChosenTarget {
  runtime::DeviceFingerprint fingerprint;
  std::string why;
};

std::string quoted(const std::string& text) {
  return "'" + text + "'";
}

// Target `name` as the log's records for workload `key` recorded it (the fingerprint of their best ok record,
// else of the last one), with this machine's CUDA and NVRTC: those decide the code NVRTC makes here, so a
// log from another toolkit is still refused.
runtime::DeviceFingerprint target_from_log(const std::vector<search::TuningRecord>& records,
                                           const std::string& key, const std::string& name) {
  std::vector<const search::TuningRecord*> named;
  std::set<std::string> names;
  for (const search::TuningRecord& record : records) {
    if (record.workload.key != key) continue;
    names.insert(record.target.name);
    if (record.target.name == name) named.push_back(&record);
  }
  if (named.empty()) {
    std::string present;
    for (const std::string& n : names) present += (present.empty() ? "" : ", ") + quoted(n);
    throw CompileError(
        "no record for target " + quoted(name) + " and workload " + key +
        " in the tuning log; targets in the log for this workload: " + (present.empty() ? "none" : present));
  }
  const search::TuningRecord* best = search::select_best(named);
  runtime::DeviceFingerprint fingerprint = (best != nullptr ? best : named.back())->target;
  // How read_fingerprint fills these on a machine with a GPU; neither needs one.
  fingerprint.cuda = runtime::cuda_version_string(CUDA_VERSION);
  fingerprint.nvrtc = runtime::nvrtc_version();
  return fingerprint;
}

ChosenTarget choose_target(const ReplayArgs& args, const std::vector<search::TuningRecord>& records,
                           const std::string& key) {
  const std::string toolkit = "with this machine's CUDA " + runtime::cuda_version_string(CUDA_VERSION) +
                              " and NVRTC " + runtime::nvrtc_version();
  if (!args.target_name.empty()) {
    return {target_from_log(records, key, args.target_name),
            quoted(args.target_name) + " as recorded in the log (--target), " + toolkit};
  }
  try {
    const runtime::DeviceFingerprint local = runtime::read_fingerprint(0);
    return {local, "the local GPU 0, " + local.name + " (" + local.arch + ", " + std::to_string(local.sms) +
                       " SMs), driver " + local.driver + ", CUDA " + local.cuda + ", NVRTC " + local.nvrtc};
  } catch (const runtime::NoCudaDeviceError& error) {
    return {target_from_log(records, key, kDefaultTargetName),
            quoted(kDefaultTargetName) + " as recorded in the log (no local GPU: " + error.reason() +
                "; --target names another), " + toolkit};
  }
}

std::optional<ReplayArgs> parse_args(const std::vector<std::string>& args, std::ostream& err) {
  ReplayArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--log" && has_value) {
      parsed.log_path = args[++i];
    } else if (arg == "--shape" && has_value) {
      parsed.shape_text = args[++i];
    } else if (arg == "--target" && has_value) {
      parsed.target_name = args[++i];
    } else if (arg == "--allow-target-mismatch") {
      parsed.allow_target_mismatch = true;
    } else if (arg == "--strict") {
      parsed.strict = true;
    } else if ((arg == "-o" || arg == "--output") && has_value) {
      parsed.directory = args[++i];
    } else if (!arg.empty() && arg[0] != '-' && parsed.workload.empty()) {
      parsed.workload = arg;
    } else {
      err << "comfuse replay: unexpected argument '" << arg << "'\n" << kUsage;
      return std::nullopt;
    }
  }
  if (parsed.log_path.empty() || parsed.workload.empty() || parsed.directory.empty()) {
    err << "comfuse replay: --log FILE, WORKLOAD and -o DIR are required\n" << kUsage;
    return std::nullopt;
  }
  return parsed;
}

// The two kernels of a back-to-back program (empty for any other program; a batched one without a two-kernel
// plan has the fused kernel alone, returned as the program itself).
std::vector<te::Program> back_to_back_parts(const te::Program& program) {
  try {
    schedule::plan_b2b(program);
  } catch (const CompileError&) {
    return {};
  }
  try {
    return schedule::kernel_programs(program);
  } catch (const CompileError&) {
    return {program};
  }
}

// A key of the back-to-back program that the log has records of: the whole program's, else a part's.
std::string key_with_records(const std::vector<search::TuningRecord>& records, const te::Program& program,
                             const std::vector<te::Program>& parts) {
  std::vector<std::string> keys = {te::workload_key(program)};
  for (const te::Program& part : parts) keys.push_back(te::workload_key(part));
  for (const std::string& key : keys) {
    for (const search::TuningRecord& r : records) {
      if (r.workload.key == key) return key;
    }
  }
  return keys.front();
}

// Writes the replayed kernel and says which record it came from.
void write_replayed(const search::ReplayResult& replayed, const std::string& directory, std::ostream& out) {
  const KernelFiles files = write_kernel_files(replayed.kernel, directory);
  const search::TuningRecord& record = replayed.record;
  const runtime::DeviceFingerprint& measured_on = record.target;
  char median[32];
  std::snprintf(median, sizeof(median), "%.1f us", *record.median_us);
  out << "record     " << search::schedule_description(record) << "\n";
  out << "schedule   " << search::schedule_text(record) << "\n";
  out << "median     " << median << " (" << record.times_us.size() << " samples) measured "
      << record.timestamp << " on " << measured_on.name << ", driver " << measured_on.driver << ", CUDA "
      << measured_on.cuda << ", NVRTC " << measured_on.nvrtc << "\n";
  out << "source     sha256 " << record.source_sha256 << " (the regenerated source matches the log)\n";
  for (const auto& [name, usage] : files.compiled.kernels) {
    out << "resources  " << name << ": " << usage.registers << " registers, " << usage.spill_store_bytes
        << " bytes spill stores, " << usage.spill_load_bytes << " bytes spill loads\n";
  }
  out << "wrote      " << files.source_path << " and " << files.cubin_path << "\n";
}

}  // namespace

int run_replay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::optional<ReplayArgs> parsed = parse_args(args, err);
  if (!parsed) return 2;
  try {
    const search::LoadResult log = search::TuningLog::load(parsed->log_path, parsed->strict);
    for (const std::string& problem : log.problems) err << "comfuse replay: warning: " << problem << "\n";
    const te::Shape shape = parsed->shape_text.empty() ? te::Shape{} : te::parse_shape(parsed->shape_text);
    const te::Program program = te::build_workload(parsed->workload, shape);
    const std::string key = te::workload_key(program);
    out << "workload   " << parsed->workload << " "
        << te::format_shape(te::workload_info(parsed->workload), shape) << " (key " << key << ")\n";
    const search::ReplayOptions options{parsed->allow_target_mismatch};
    const std::vector<te::Program> parts = back_to_back_parts(program);
    if (parts.empty()) {
      const ChosenTarget target = choose_target(*parsed, log.records, key);
      out << "target     " << target.why << "\n";
      write_replayed(search::replay(log.records, program, target.fingerprint, options), parsed->directory,
                     out);
      return 0;
    }
    // Back to back: the fused kernel or the two kernels, whichever the log's records say is faster.
    const std::string any_key = key_with_records(log.records, program, parts);
    const ChosenTarget target = choose_target(*parsed, log.records, any_key);
    out << "target     " << target.why << "\n";
    const search::B2BChoice choice = search::choose_b2b(log.records, program, target.fingerprint, options);
    out << "plan       " << choice.reason << "\n";
    if (choice.fused) {
      write_replayed(*choice.fused_kernel, parsed->directory, out);
    } else {
      for (const search::ReplayResult& part : choice.parts) write_replayed(part, parsed->directory, out);
    }
    return 0;
  } catch (const CompileError& error) {
    err << "comfuse replay: " << error.what() << "\n";
    return 2;
  } catch (const RuntimeError& error) {
    err << "comfuse replay: " << error.what() << "\n";
    return 4;
  }
}

}  // namespace comfuse::cli
