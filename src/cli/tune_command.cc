// Implementation of `comfuse tune`.
#include "cli/tune_command.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <system_error>

#include "schedule/fusion_plan.h"
#include "search/b2b_choice.h"
#include "search/gpu_runner.h"
#include "search/gpu_tuning.h"
#include "search/search_space.h"
#include "search/start_points.h"
#include "search/tuner.h"
#include "search/tuning_kernels.h"
#include "search/tuning_log.h"
#include "support/error.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

constexpr const char* kUsage =
    "usage: comfuse tune WORKLOAD [--shape M=…,K=…,N=…] [--trials N | --seconds S] [--exhaustive]\n"
    "                    [--log FILE] [--start-log FILE] [--repeats N] [--seed N]\n"
    "                    [--inject-faults KIND@ORDINAL,…] [--timeout S]\n";

// A usage error: reported with the usage text and exit code 2.
struct UsageError {
  std::string message;
};

template <typename Int>
Int parse_integer(const std::string& flag, const std::string& text, Int minimum) {
  Int value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < minimum) {
    throw UsageError{flag + ": expected an integer of at least " + std::to_string(minimum) + ", got '" +
                     text + "'"};
  }
  return value;
}

double parse_seconds(const std::string& flag, const std::string& text) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !(value > 0) ||
      value > 1e9) {  // also refuses NaN and inf
    throw UsageError{flag + ": expected a positive number of seconds, got '" + text + "'"};
  }
  return value;
}

struct TuneArgs {
  std::string workload, shape_text, log_path;
  std::string start_log;  // whose winners on this GPU the search tries first
  std::optional<int> trials;
  std::optional<double> seconds;
  bool exhaustive = false;
  int repeats = 30;
  std::uint64_t seed = 1;
  double timeout_s = 30;
  std::map<int, search::Fault> faults;
};

TuneArgs parse_args(const std::vector<std::string>& args) {
  TuneArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--shape" && has_value) {
      parsed.shape_text = args[++i];
    } else if (arg == "--trials" && has_value) {
      parsed.trials = parse_integer<int>(arg, args[++i], 1);
    } else if (arg == "--seconds" && has_value) {
      parsed.seconds = parse_seconds(arg, args[++i]);
    } else if (arg == "--exhaustive") {
      parsed.exhaustive = true;
    } else if (arg == "--log" && has_value) {
      parsed.log_path = args[++i];
    } else if (arg == "--start-log" && has_value) {
      parsed.start_log = args[++i];
    } else if (arg == "--repeats" && has_value) {
      parsed.repeats = parse_integer<int>(arg, args[++i], 1);
    } else if (arg == "--seed" && has_value) {
      parsed.seed = parse_integer<std::uint64_t>(arg, args[++i], 0);
    } else if (arg == "--inject-faults" && has_value) {
      try {
        parsed.faults = parse_fault_spec(args[++i]);
      } catch (const CompileError& error) {
        throw UsageError{std::string("--inject-faults: ") + error.what()};
      }
    } else if (arg == "--timeout" && has_value) {
      parsed.timeout_s = parse_seconds(arg, args[++i]);
    } else if (!arg.empty() && arg[0] != '-' && parsed.workload.empty()) {
      parsed.workload = arg;
    } else {
      throw UsageError{"unexpected argument '" + arg + "'"};
    }
  }
  if (parsed.workload.empty()) throw UsageError{"no workload given"};
  if (parsed.trials && parsed.seconds) throw UsageError{"--trials and --seconds cannot be used together"};
  if (parsed.trials && parsed.exhaustive)
    throw UsageError{"--trials and --exhaustive cannot be used together"};
  return parsed;
}

std::string format_us(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f us", us);
  return text;
}

// One progress line. The counter is records written over candidates planned; the closest contenders'
// re-measurements at the end come on top of the plan.
std::string progress_line(const search::TuneProgress& p) {
  char head[160];
  std::snprintf(head, sizeof(head), "[%3d/%d] compiled %d measured %d failed %d  ", p.records_written,
                p.planned, p.compiled, p.measured, p.failed);
  if (!p.best_us) return std::string(head) + "best -";
  return std::string(head) + "best " + format_us(*p.best_us) + "  " + p.best;
}

// How the tune output names a kernel of the workload.
const char* label_of(search::TuningKernel::Role role) {
  switch (role) {
    case search::TuningKernel::Role::kWhole:
      return "fused";
    case search::TuningKernel::Role::kFirstPart:
      return "GEMM1 with the tiles between (the back-to-back program as two kernels)";
    case search::TuningKernel::Role::kSecondPart:
      return "GEMM2 with its epilogue";
    case search::TuningKernel::Role::kFusedB2B:
      return "the fused back-to-back kernel (GEMM1, the tiles between and GEMM2 in one)";
  }
  return "?";
}

// The part of a worker start failure that says why ("no CUDA device: …"), without the wrapper's prefix.
std::string start_failure_reason(const std::string& what) {
  const std::string marker = "could not start: ";
  const std::size_t at = what.find(marker);
  return at == std::string::npos ? what : what.substr(at + marker.size());
}

void print_summary(const TuneArgs& args, const te::Program& program, const runtime::DeviceFingerprint& target,
                   const search::TuneResult& result, std::optional<double> gemm_us,
                   const std::string& gemm_note, std::ostream& out) {
  const search::TuningRecord& winner = result.winner;
  const te::Shape shape = args.shape_text.empty() ? te::Shape{} : te::parse_shape(args.shape_text);
  out << "workload   " << args.workload << " " << te::format_shape(te::workload_info(args.workload), shape)
      << " (key " << te::workload_key(program) << ")\n";
  out << "target     " << target.name << " (" << target.arch << ", " << target.sms << " SMs), driver "
      << target.driver << ", CUDA " << target.cuda << ", NVRTC " << target.nvrtc << "\n";
  out << "winner     " << search::schedule_description(winner) << "\n";
  out << "schedule   " << search::schedule_text(winner) << "\n";
  out << "fused      " << format_us(*winner.median_us) << " (median of " << winner.times_us.size()
      << " samples)\n";
  if (gemm_us) {
    char ratio[96];
    std::snprintf(ratio, sizeof(ratio), "%.3f, residual %.1f us", *winner.median_us / *gemm_us,
                  *winner.median_us - *gemm_us);
    out << "GEMM alone " << format_us(*gemm_us) << " (cuBLAS, same operands)\n";
    out << "fused / GEMM alone " << ratio << "\n";
  } else {
    out << "GEMM alone unavailable" << (gemm_note.empty() ? "" : " (" + gemm_note + ")") << "\n";
  }
  out << "candidates space " << result.space << ", compiled " << result.compiled << ", measured "
      << result.measured << ", failed " << result.failed << "\n";
  char wall[64];
  std::snprintf(wall, sizeof(wall), "%.1f s (and %.1f s preparing the space before)", result.seconds,
                result.prepare_seconds);
  out << "wall       " << wall << "\n";
  if (args.log_path.empty()) {
    out << "log        no log written (--log FILE keeps the records for replay)\n";
  } else {
    out << "log        " << args.log_path << " (" << result.records.size() << " records appended)\n";
  }
}

}  // namespace

std::map<int, search::Fault> parse_fault_spec(const std::string& spec) {
  std::map<int, search::Fault> faults;
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    const std::size_t at = item.find('@');
    if (at == std::string::npos) throw CompileError("'" + item + "': expected KIND@ORDINAL");
    const std::string kind = item.substr(0, at), ordinal_text = item.substr(at + 1);
    const std::optional<search::Fault> fault = search::parse_fault(kind);
    if (!fault) throw CompileError("'" + item + "': unknown fault '" + kind + "' (oob_write, trap, hang)");
    int ordinal = -1;
    const auto [end, error] =
        std::from_chars(ordinal_text.data(), ordinal_text.data() + ordinal_text.size(), ordinal);
    if (error != std::errc() || end != ordinal_text.data() + ordinal_text.size() || ordinal < 0) {
      throw CompileError("'" + item + "': ordinal '" + ordinal_text + "' is not a non-negative integer");
    }
    if (!faults.emplace(ordinal, *fault).second) {
      throw CompileError("'" + item + "': candidate " + ordinal_text + " already has a fault");
    }
  }
  return faults;
}

int run_tune(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             bool err_is_terminal) {
  TuneArgs parsed;
  try {
    parsed = parse_args(args);
  } catch (const UsageError& error) {
    err << "comfuse tune: " << error.message << "\n" << kUsage;
    return 2;
  }
  bool drew = false;  // a '\r' bar is on screen: end its line before anything else is printed
  auto end_bar = [&] {
    if (drew) err << "\n";
    drew = false;
  };
  try {
    const te::Shape shape = parsed.shape_text.empty() ? te::Shape{} : te::parse_shape(parsed.shape_text);
    if (!parsed.log_path.empty() && !std::ofstream(parsed.log_path, std::ios::app)) {
      // Found out now rather than after the first batch has compiled.
      throw CompileError("cannot open tuning log '" + parsed.log_path + "' for appending");
    }
    // Read now, before any part compiles: a log that does not load stops the run before it starts.
    const search::LoadResult start_log =
        parsed.start_log.empty() ? search::LoadResult{} : search::TuningLog::load(parsed.start_log, true);
    const std::vector<search::TuningKernel> parts = search::tuning_kernels(parsed.workload, shape);
    std::vector<search::TuningRecord> all_records;  // of every part, for the back-to-back guard
    runtime::DeviceFingerprint last_target;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      if (parts.size() > 1) {
        out << (p == 0 ? "" : "\n") << "== part " << p + 1 << " of " << parts.size() << ": "
            << label_of(parts[p].role) << "\n";
      }
      // The measurer forks its supervisor here, before anything in this process touches CUDA: a child cannot
      // use a driver its parent initialised. Nothing below may call the driver directly.
      search::IsolationOptions isolation;
      isolation.candidate_timeout_s = parsed.timeout_s;
      search::GpuTuning tuning(parts[p], parsed.seed, isolation);
      search::IsolatedMeasurer& measurer = tuning.measurer();
      runtime::DeviceFingerprint target;
      try {
        target = measurer.target();
      } catch (const RuntimeError& error) {
        err << "comfuse tune: no GPU: " << start_failure_reason(error.what()) << "\n";
        return 3;
      }

      search::TuneOptions options;
      options.exhaustive = parsed.exhaustive;
      // A time budget alone bounds the run, so the trial cap is the whole space (not more: the tuner's first
      // batch is half the cap, compiled before anything is measured).
      const search::GpuWorkload* workload = tuning.gemm_workload();
      options.trials = parsed.seconds && workload
                           ? std::max(1, static_cast<int>(search::schedule_space(workload->plan).size()))
                           : parsed.trials.value_or(40);
      options.seconds = parsed.seconds.value_or(0);
      options.repeats = parsed.repeats;
      options.log_path = parsed.log_path;
      options.faults = parsed.faults;
      if (!parsed.start_log.empty()) {
        options.starts = search::start_points(start_log.records, target.name);
        options.resume =
            search::own_winner(start_log.records, target.name, te::workload_key(parts[p].program));
        out << "starts     " << options.starts.size() << " winners on " << target.name << " from "
            << parsed.start_log << " (tried first where this search's space has them"
            << (options.resume ? "; this workload's own first" : "") << ")\n";
      }
      options.progress = [&](const search::TuneProgress& progress) {
        if (err_is_terminal) {
          err << "\r" << progress_line(progress) << "\x1b[K" << std::flush;  // clear the rest of the old line
          drew = true;
        } else {
          err << progress_line(progress) << "\n";
        }
      };
      const search::TuneResult result = tuning.tune(options);
      end_bar();
      all_records.insert(all_records.end(), result.records.begin(), result.records.end());
      last_target = target;

      std::optional<double> gemm_us;
      std::string gemm_note;
      try {
        gemm_us = measurer.gemm_alone_us(100);
      } catch (const RuntimeError& error) {
        gemm_note = error.what();  // the tuning result stands without the baseline
      }
      print_summary(parsed, parts[p].program, target, result, gemm_us, gemm_note, out);
    }
    if (parts.size() > 1 && parts.back().role == search::TuningKernel::Role::kFusedB2B) {
      const search::B2BChoice choice =
          search::choose_b2b(all_records, te::build_workload(parsed.workload, shape), last_target,
                             {.allow_target_mismatch = false});
      out << "\nplan       " << choice.reason << "\n";
    }
    return 0;
  } catch (const CompileError& error) {
    end_bar();
    err << "comfuse tune: " << error.what() << "\n";
    return 2;
  } catch (const RuntimeError& error) {
    end_bar();
    err << "comfuse tune: " << error.what() << "\n";
    return 4;
  } catch (const std::system_error& error) {  // the tuning log could not be written
    end_bar();
    err << "comfuse tune: " << error.what() << "\n";
    return 4;
  }
}

}  // namespace comfuse::cli
