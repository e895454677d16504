// Implementation of `comfuse trace`.
#include "cli/trace_command.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "codegen/fused_kernel.h"
#include "codegen/phase_trace.h"
#include "codegen/reference_check.h"
#include "runtime/context.h"
#include "runtime/fingerprint.h"
#include "runtime/kernel_timer.h"
#include "search/gpu_runner.h"
#include "search/replay.h"
#include "search/tuning_kernels.h"
#include "search/tuning_log.h"
#include "support/error.h"
#include "te/json.h"
#include "te/row_slice.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

constexpr const char* kUsage =
    "usage: comfuse trace WORKLOAD [--shape M=…,K=…,N=…] (--log FILE [--allow-target-mismatch] | --schedule "
    "JSON)\n"
    "                     [--set KNOB=VALUE,…] [--launches N] [--repeats N] [--seed N] [--json FILE]\n"
    "                     [--row-slices S,…]\n";

struct TraceArgs {
  std::string workload, shape_text, log_path, schedule_text, json_path;
  std::vector<std::string> settings;  // --set: knobs changed from the log's winner or the given schedule
  std::vector<int> row_slices;  // --row-slices: the schedule also run as S launches over M / S rows each
  int launches = 3;
  int repeats = 20;  // timed runs of the kernel with and without the trace; 0: none
  std::uint64_t seed = 1;
  bool allow_target_mismatch = false;
};

template <typename Int>
std::optional<Int> parse_integer(const std::string& text, Int minimum) {
  Int value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < minimum) return std::nullopt;
  return value;
}

std::optional<TraceArgs> parse_args(const std::vector<std::string>& args, std::ostream& err) {
  TraceArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--shape" && has_value) {
      parsed.shape_text = args[++i];
    } else if (arg == "--log" && has_value) {
      parsed.log_path = args[++i];
    } else if (arg == "--schedule" && has_value) {
      parsed.schedule_text = args[++i];
    } else if (arg == "--set" && has_value) {
      std::stringstream list(args[++i]);
      for (std::string setting; std::getline(list, setting, ',');) parsed.settings.push_back(setting);
    } else if (arg == "--row-slices" && has_value) {
      std::stringstream list(args[++i]);
      for (std::string count; std::getline(list, count, ',');) {
        const std::optional<int> value = parse_integer<int>(count, 2);
        if (!value || *value > 64) {
          err << "comfuse trace: --row-slices: expected counts from 2 to 64, got '" << count << "'\n"
              << kUsage;
          return std::nullopt;
        }
        parsed.row_slices.push_back(*value);
      }
    } else if (arg == "--allow-target-mismatch") {
      parsed.allow_target_mismatch = true;
    } else if (arg == "--json" && has_value) {
      parsed.json_path = args[++i];
    } else if ((arg == "--launches" || arg == "--repeats" || arg == "--seed") && has_value) {
      const std::string& text = args[++i];
      const bool counted = arg != "--seed";  // --launches from 1, --repeats from 0, both to 1000
      const std::uint64_t least = arg == "--launches" ? 1 : 0;
      const std::optional<std::uint64_t> value = parse_integer<std::uint64_t>(text, least);
      if (!value || (counted && *value > 1000)) {
        err << "comfuse trace: " << arg << ": expected an integer "
            << (counted ? "from " + std::to_string(least) + " to 1000" : std::string("of at least 0"))
            << ", got '" << text << "'\n"
            << kUsage;
        return std::nullopt;
      }
      if (arg == "--launches") {
        parsed.launches = static_cast<int>(*value);
      } else if (arg == "--repeats") {
        parsed.repeats = static_cast<int>(*value);
      } else {
        parsed.seed = *value;
      }
    } else if (!arg.empty() && arg[0] != '-' && parsed.workload.empty()) {
      parsed.workload = arg;
    } else {
      err << "comfuse trace: unexpected argument '" << arg << "'\n" << kUsage;
      return std::nullopt;
    }
  }
  if (parsed.workload.empty() || parsed.log_path.empty() == parsed.schedule_text.empty()) {
    err << "comfuse trace: a WORKLOAD and one of --log FILE or --schedule JSON are required\n" << kUsage;
    return std::nullopt;
  }
  return parsed;
}

// The workload's fused-GEMM kernel.
search::TuningKernel fused_kernel_of(const std::string& workload, const te::Shape& shape) {
  for (search::TuningKernel& kernel : search::tuning_kernels(workload, shape)) {
    if (kernel.role == search::TuningKernel::Role::kWhole) return kernel;
  }
  throw CompileError("workload '" + workload +
                     "' runs as back-to-back kernels; the phase trace covers fused-GEMM kernels only");
}

// The traced and the untraced kernel timed on the same inputs (CUPTI, L2 flushed before each run): what the
// trace's stores cost the kernel.
std::string overhead_line(runtime::KernelTimer& timer, const codegen::FusedKernel& traced,
                          const codegen::DeviceBindings& traced_bindings,
                          const codegen::FusedKernel& untraced, const codegen::DeviceBindings& bindings,
                          int repeats) {
  runtime::TimingOptions timing;
  timing.warmup = 3;
  timing.repeats = repeats;
  const double with = timer.measure([&](CUstream s) { traced.launch(traced_bindings, s); }, timing).median_us;
  const runtime::Timing plain = timer.measure([&](CUstream s) { untraced.launch(bindings, s); }, timing);
  const double without = plain.median_us;
  char line[300];
  std::snprintf(
      line, sizeof(line),
      "time       traced %.1f us, untraced %.1f us (medians of %d runs, CUPTI, L2 flushed): the trace "
      "adds %+.1f%%\n",
      with, without, repeats, 100 * (with / without - 1));
  std::string text = line;
  if (plain.kernel_median_us.size() == 2) {  // a deferred reduction: the main kernel, then the finish kernel
    std::snprintf(line, sizeof(line), "kernels    untraced main %.1f us, finish %.1f us (medians)\n",
                  plain.kernel_median_us[0], plain.kernel_median_us[1]);
    text += line;
  }
  return text;
}

// The schedule run as `slices` launches over M / slices rows each (te::with_rows: the same program with fewer
// rows, each launch at its rows of the whole program's buffers), checked against the whole program's
// reference with the outputs poisoned first, then timed beside the untraced whole kernel by CUPTI (with each
// kernel's sum over the slices) and by CUDA events (which count the launches between). NOTES, "Question — row
// slices".
std::string slices_line(const runtime::Context& context, const runtime::Stream& stream,
                        runtime::KernelTimer& timer, const search::TuningKernel& kernel,
                        const search::GpuWorkload& workload, const schedule::Schedule& schedule,
                        const codegen::FusedKernel& whole, const codegen::DeviceBindings& whole_bindings,
                        const std::vector<const void*>& data, int slices, int repeats, bool* wrong) {
  char line[400];
  const std::int64_t rows = workload.plan.anchor.m;
  if (rows % slices != 0) {
    std::snprintf(line, sizeof(line), "slices     %d: M = %lld rows do not cut into %d equal slices\n",
                  slices, static_cast<long long>(rows), slices);
    return line;
  }
  std::optional<te::Program> part;
  codegen::KernelSource source;
  try {
    part = te::with_rows(kernel.program, rows / slices);
    source = codegen::emit_kernel(schedule::plan_fusion(*part), schedule, te::workload_key(*part));
  } catch (const CompileError& error) {
    return "slices     " + std::to_string(slices) + ": the schedule at M = " + std::to_string(rows / slices) +
           ": " + error.what() + "\n";
  }
  const codegen::FusedKernel sliced(context, *part, source);
  int cut = 0;
  codegen::DeviceBindings bindings = sliced.bind_whole(kernel.program, data, &cut);
  COMFUSE_CHECK(cut == slices, "the whole program cuts into the slices asked for");
  const auto run = [&](CUstream stream) {
    for (int slice = 0; slice < slices; ++slice) sliced.launch_slice(bindings, slice, stream);
  };
  for (runtime::DeviceBuffer& output : bindings.outputs) output.fill_bytes(0xFF);
  run(stream.get());
  stream.synchronize();
  const std::vector<te::HostBuffer> gpu = codegen::download_outputs(kernel.program, bindings);
  const codegen::ReferenceCheck check = codegen::check_outputs(workload.reference, gpu, workload.tolerance);
  *wrong = *wrong || !check.ok;
  runtime::TimingOptions timing;
  timing.warmup = 3;
  timing.repeats = repeats;
  const runtime::Timing cupti = timer.measure(run, timing);
  const double whole_cupti =
      timer.measure([&](CUstream s) { whole.launch(whole_bindings, s); }, timing).median_us;
  timing.clock = runtime::TimingOptions::Clock::kEvents;
  const double events = timer.measure(run, timing).median_us;
  const double whole_events =
      timer.measure([&](CUstream s) { whole.launch(whole_bindings, s); }, timing).median_us;
  double main = 0, finish = 0;  // each kernel's sum over the slices, when every slice ran a main and a finish
  const bool pairs = cupti.kernel_median_us.size() == 2 * static_cast<std::size_t>(slices);
  for (std::size_t k = 0; pairs && k < cupti.kernel_median_us.size(); ++k) {
    (k % 2 == 0 ? main : finish) += cupti.kernel_median_us[k];
  }
  std::snprintf(line, sizeof(line),
                "slices     %d x %lld rows: check %s (max relative error %g), CUPTI %.1f us", slices,
                static_cast<long long>(rows / slices), check.ok ? "ok" : "WRONG", check.max_rel_error,
                cupti.median_us);
  std::string text = line;
  if (pairs) {
    std::snprintf(line, sizeof(line), " (main %.1f + finish %.1f)", main, finish);
    text += line;
  }
  std::snprintf(line, sizeof(line),
                ", events %.1f us; whole: CUPTI %.1f us, events %.1f us (medians of %d)\n", events,
                whole_cupti, whole_events, repeats);
  return text + line + (check.ok ? "" : check.detail);
}

nlohmann::json records_json(const std::vector<codegen::TraceSlot>& slots) {
  nlohmann::json json = nlohmann::json::array();
  for (const codegen::TraceSlot& slot : slots) {
    nlohmann::json records = nlohmann::json::array();
    for (const codegen::TraceRecord& r : slot.records) {
      records.push_back({{"clock", r.clock - slot.start_clock},
                         {"event", codegen::event_name(r.event, r.stage)},
                         {"m_block", r.m_block},
                         {"n_tile", r.n_tile == codegen::kTraceRowBlock ? -1 : r.n_tile}});
    }
    json.push_back({{"cta", slot.cta},
                    {"warpgroup", slot.warpgroup},
                    {"sm", slot.sm},
                    {"start_ns", slot.start_ns},
                    {"end_ns", slot.end_ns},
                    {"written", slot.written},
                    {"records", std::move(records)}});
  }
  return json;
}

}  // namespace

int run_trace(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::optional<TraceArgs> parsed = parse_args(args, err);
  if (!parsed) return 2;
  try {
    const te::Shape shape = parsed->shape_text.empty() ? te::Shape{} : te::parse_shape(parsed->shape_text);
    const search::TuningKernel kernel = fused_kernel_of(parsed->workload, shape);
    const std::string key = te::workload_key(kernel.program);
    out << "workload   " << parsed->workload << " "
        << te::format_shape(te::workload_info(parsed->workload), shape) << " (key " << key << ")\n";
    // The schedule and the kernel first: a user's mistake is reported before any GPU is asked for.
    std::optional<runtime::DeviceFingerprint> target;
    schedule::Schedule schedule;
    if (!parsed->log_path.empty()) {
      const search::LoadResult log = search::TuningLog::load(parsed->log_path);
      for (const std::string& problem : log.problems) err << "comfuse trace: warning: " << problem << "\n";
      target = runtime::read_fingerprint(0);  // the log's winner for this GPU, as replay picks it
      const search::ReplayResult replayed =
          search::replay(log.records, kernel.program, *target, {parsed->allow_target_mismatch});
      schedule = replayed.record.schedule;
      out << "record     " << search::schedule_description(replayed.record) << " ("
          << *replayed.record.median_us << " us untraced on " << replayed.record.target.name << ", "
          << replayed.record.timestamp << ")\n";
    } else {
      nlohmann::json json;
      try {
        json = nlohmann::json::parse(parsed->schedule_text);
      } catch (const nlohmann::json::parse_error& error) {
        throw CompileError(std::string("--schedule: not JSON: ") + error.what());
      }
      schedule = schedule::schedule_from_json(json, "--schedule");
    }
    if (!parsed->settings.empty()) {
      schedule =
          schedule::with_knobs(schedule, schedule::parse_knob_settings(parsed->settings, "--set"), "--set");
      std::string settings;
      for (const std::string& setting : parsed->settings)
        settings += (settings.empty() ? "" : ", ") + setting;
      out << "set        " << settings << "\n";
    }
    codegen::EmitOptions options;
    options.phase_trace = true;
    const schedule::FusionPlan plan = schedule::plan_fusion(kernel.program);
    const codegen::KernelSource source = codegen::emit_kernel(plan, schedule, key, options);
    out << "schedule   " << schedule::to_string(schedule) << "\n";
    if (!target) target = runtime::read_fingerprint(0);
    const search::GpuWorkload workload = search::prepare_workload(kernel.program, parsed->seed);

    const runtime::Context context(0);
    const runtime::Stream stream(context);
    const codegen::FusedKernel fused(context, kernel.program, source);
    std::vector<const void*> data;
    for (const te::HostBuffer& input : workload.inputs) data.push_back(input.data());
    codegen::DeviceBindings bindings = fused.bind(data);
    for (int launch = 0; launch < parsed->launches; ++launch) {
      for (runtime::DeviceBuffer& output : bindings.outputs) output.fill_bytes(0xFF);
      fused.clear_trace(bindings);
      fused.launch(bindings, stream.get());
      stream.synchronize();
    }
    const std::vector<te::HostBuffer> gpu = codegen::download_outputs(kernel.program, bindings);
    const codegen::ReferenceCheck check = codegen::check_outputs(workload.reference, gpu, workload.tolerance);
    out << "check      " << (check.ok ? "ok" : "WRONG") << ", max relative error " << check.max_rel_error
        << " (launch " << parsed->launches << " of " << parsed->launches << ", outputs poisoned first)\n";
    const std::vector<codegen::TraceSlot> slots = fused.read_trace(bindings);
    out << "trace      " << fused.grid() << " CTAs x " << source.launch.block_x / 128 << " warpgroups, "
        << source.trace_capacity << " records a slot (" << target->name << ", SM clock at most "
        << target->sm_clock_khz / 1000 << " MHz)\n";
    const codegen::TraceSummary summary = codegen::summarize_trace(slots);
    out << codegen::format_trace_summary(summary);
    bool slices_wrong = false;
    if (parsed->repeats > 0 || !parsed->row_slices.empty()) {
      const codegen::FusedKernel untraced(context, kernel.program, codegen::emit_kernel(plan, schedule, key));
      const codegen::DeviceBindings untraced_bindings = untraced.bind(data);
      runtime::KernelTimer timer(context, stream);
      if (parsed->repeats > 0) {
        out << overhead_line(timer, fused, bindings, untraced, untraced_bindings, parsed->repeats);
      }
      for (int slices : parsed->row_slices) {
        out << slices_line(context, stream, timer, kernel, workload, schedule, untraced, untraced_bindings,
                           data, slices, std::max(parsed->repeats, 1), &slices_wrong);
        out.flush();
      }
    }
    if (!parsed->json_path.empty()) {
      std::ofstream file(parsed->json_path);
      file << nlohmann::json{{"workload", parsed->workload},
                             {"schedule", schedule::to_json(schedule)},
                             {"sm_clock_mhz", summary.clock_mhz},  // as the trace measured it
                             {"sm_clock_max_khz", target->sm_clock_khz},
                             {"slots", records_json(slots)}}
                  .dump()
           << "\n";
      if (!file) throw CompileError("cannot write '" + parsed->json_path + "'");
    }
    if (!check.ok) {
      err << "comfuse trace: the traced kernel's outputs are wrong:\n" << check.detail;
      return 3;
    }
    if (slices_wrong) {
      err << "comfuse trace: the row slices' outputs are wrong (lines above)\n";
      return 3;
    }
    return 0;
  } catch (const CompileError& error) {
    err << "comfuse trace: " << error.what() << "\n";
    return 2;
  } catch (const RuntimeError& error) {
    err << "comfuse trace: " << error.what() << "\n";
    return 4;
  }
}

}  // namespace comfuse::cli
