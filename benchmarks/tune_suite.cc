// Tunes every suite workload comfuse can fuse on the GPU and writes the tuning log, plus the acceptance
// experiments of the autotuner: exhaustive sweeps of the same pruned space, a repeated run, and a run with
// faulty candidates injected. Prints a table and writes a JSON summary.
//
//   tune_suite OUT_DIR [--trials N] [--seconds S] [--only WORKLOAD,...] [--sweep NAME,...] [--repeat NAME]
//                      [--faults NAME] [--skip-suite] [--fused-only] [--fix KNOB=VALUE,...]
//                      [--ab KNOB --ab-log LOG] [--start-log LOG]
//
// NAME is a suite row's instance name (post_layernorm_M16384_K1024_N1024). Back-to-back rows that run as two
// kernels (MLPs) are tuned part by part ("NAME/part1", "NAME/part2") and as the fused kernel ("NAME/fused").
// The log of the suite run is OUT_DIR/tuning.jsonl; sweeps, the repeat and the fault run log to their own
// files beside it. --fused-only tunes only the fused back-to-back kernels (the parts keep their records from
// an earlier run). --fix tunes only the schedules with the given knob values (persistent=true,
// carried=registers: an experiment on one part of the space). --ab tunes each row only over the fastest
// schedule LOG holds for it and that schedule with the optional knob KNOB flipped, in canonical form (with
// --trials 2: an A/B of one knob, every other knob fixed; a knob that frees a pipeline stage, turned on, is
// tried with that stage too, so --trials 3). --start-log has each search try first the winners
// that LOG holds for this GPU, of every workload, where the row's space has them (search/start_points.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "search/gpu_runner.h"
#include "search/gpu_tuning.h"
#include "search/search_space.h"
#include "search/start_points.h"
#include "search/tuner.h"
#include "search/tuning_kernels.h"
#include "search/tuning_log.h"
#include "suite.h"
#include "support/error.h"
#include "te/json.h"

namespace comfuse::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string out_dir;
  int trials = 40;
  double seconds = 55;
  std::vector<std::string> only;  // workload or instance names; empty: all
  std::vector<std::string> fix;   // knob=value: tune only schedules with these knob values (experiments)
  std::string ab_knob, ab_log;    // an A/B of one knob about each row's fastest schedule in a log
  std::string start_log;          // whose winners each search tries first
  std::vector<std::string> sweep;
  std::string repeat, faults;
  bool skip_suite = false;
  bool fused_only = false;  // only the "NAME/fused" kernels of back-to-back rows
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

struct Outcome {
  nlohmann::json summary;
  search::TuneResult result;
};

// One kernel to tune (search::TuningKernel), with its name in the tables.
struct Kernel {
  std::string name;  // the row's instance name, with "/part1", "/part2" or "/fused" for a back-to-back row
  search::TuningKernel kernel;
  bool fused_b2b() const { return kernel.role == search::TuningKernel::Role::kFusedB2B; }
};

// The kernels a row is tuned as (search::tuning_kernels), named after the row.
std::vector<Kernel> kernels_of(const SuiteEntry& entry) {
  const std::string name = te::instance_name(te::workload_info(entry.workload), entry.shape);
  std::vector<Kernel> kernels;
  for (search::TuningKernel& k : search::tuning_kernels(entry.workload, entry.shape)) {
    using Role = search::TuningKernel::Role;
    const char* suffix = k.role == Role::kFirstPart    ? "/part1"
                         : k.role == Role::kSecondPart ? "/part2"
                         : k.role == Role::kFusedB2B   ? "/fused"
                                                       : "";
    kernels.push_back({name + suffix, std::move(k)});
  }
  return kernels;
}

// Prepares the kernel (inputs, reference), starts the workers and tunes; wall time covers all of it.
// With `starts` (a log's records), the search starts from their winners on this GPU.
Outcome tune_kernel(const Kernel& kernel, search::TuneOptions options, double timeout_s = 30,
                    const std::vector<search::TuningRecord>& starts = {}) {
  const auto start = Clock::now();
  search::IsolationOptions isolation;
  isolation.candidate_timeout_s = timeout_s;
  search::GpuTuning tuning(kernel.kernel, 1, isolation);
  search::IsolatedMeasurer& measurer = tuning.measurer();
  if (!starts.empty()) {
    const std::string gpu = measurer.target().name;
    options.starts = search::start_points(starts, gpu);
    options.resume = search::own_winner(starts, gpu, te::workload_key(kernel.kernel.program));
    std::fprintf(stderr, "%s: starts from %zu winners on %s%s\n", kernel.name.c_str(), options.starts.size(),
                 gpu.c_str(), options.resume ? ", its own first" : "");
  }
  const search::GpuWorkload* workload = tuning.gemm_workload();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  // Where a run stands, on stderr as it goes: a run stopped from outside still shows how far it got.
  std::fprintf(stderr, "%s: %.1fs prepared\n", kernel.name.c_str(), elapsed());
  options.progress = [&](const search::TuneProgress& p) {
    std::fprintf(stderr, "%s: %.1fs compiled %d measured %d failed %d records %d\n", kernel.name.c_str(),
                 elapsed(), p.compiled, p.measured, p.failed, p.records_written);
  };
  search::TuneResult result = tuning.tune(options);
  const double wall = elapsed();
  const std::optional<double> gemm = measurer.gemm_alone_us(50);
  double default_us = 0;  // of the default schedule
  for (const search::TuningRecord& r : result.records) {
    const bool is_default =
        workload ? r.schedule == search::canonical(workload->plan, schedule::default_schedule(workload->plan))
                 : r.b2b == schedule::B2BSchedule{};
    if (is_default && r.median_us) default_us = *r.median_us;
  }
  std::map<std::string, int> statuses;
  for (const search::TuningRecord& r : result.records) ++statuses[std::string(search::status_name(r.status))];
  nlohmann::json summary = {{"name", kernel.name},
                            {"wall_seconds", wall},
                            {"tune_seconds", result.seconds},
                            {"prepare_seconds", result.prepare_seconds},
                            {"space", result.space},
                            {"compiled", result.compiled},
                            {"measured", result.measured},
                            {"failed", result.failed},
                            {"statuses", statuses},
                            {"winner", nlohmann::json::parse(search::schedule_text(result.winner))},
                            {"winner_us", *result.winner.median_us},
                            {"default_us", default_us > 0 ? nlohmann::json(default_us) : nlohmann::json()},
                            {"cublas_gemm_us", gemm ? nlohmann::json(*gemm) : nlohmann::json()},
                            {"workers_started", measurer.workers_started()}};
  return {summary, std::move(result)};
}

void print_row(const nlohmann::json& s) {
  std::printf(
      "%-44s %6.1fs %5d/%-4d fail %-3d  best %9.1f us  default %9s  gemm %8s\n",
      s["name"].get<std::string>().c_str(), s["wall_seconds"].get<double>(), s["measured"].get<int>(),
      s["space"].get<int>(), s["failed"].get<int>(), s["winner_us"].get<double>(),
      s["default_us"].is_null() ? "-" : std::to_string(s["default_us"].get<double>()).substr(0, 8).c_str(),
      s["cublas_gemm_us"].is_null() ? "-"
                                    : std::to_string(s["cublas_gemm_us"].get<double>()).substr(0, 7).c_str());
  std::fflush(stdout);
}

// The single kernel of the suite row called `name`.
Kernel find_kernel(const std::string& name) {
  for (const SuiteEntry& e : suite()) {
    if (te::instance_name(te::workload_info(e.workload), e.shape) != name) continue;
    const std::vector<Kernel> kernels = kernels_of(e);
    if (kernels.size() != 1)
      throw CompileError("suite row '" + name + "' runs as " + std::to_string(kernels.size()) + " kernels");
    return kernels[0];
  }
  throw CompileError("no suite row named '" + name + "'");
}

// With --ab: the options of `kernel`'s run, admitting only its fastest schedule in `log` and that schedule
// with the knob flipped.
search::TuneOptions ab_options(const Kernel& kernel, const search::LoadResult& log, const Args& args,
                               search::TuneOptions options) {
  const std::optional<schedule::Schedule> best =
      search::workload_winner(log.records, te::workload_key(kernel.kernel.program));
  if (!best)
    throw CompileError("--ab: " + args.ab_log + " holds no measured fused-GEMM record of " + kernel.name);
  std::fprintf(stderr, "%s: A/B of %s about %s\n", kernel.name.c_str(), args.ab_knob.c_str(),
               schedule::to_string(*best).c_str());
  options.admit = search::knob_pair_filter(schedule::plan_fusion(kernel.kernel.program), *best, args.ab_knob);
  return options;
}

int run(const Args& args) {
  nlohmann::json report = {{"suite", nlohmann::json::array()}};
  search::TuneOptions options;
  options.trials = args.trials;
  options.seconds = args.seconds;
  if (!args.fix.empty()) options.admit = search::knob_filter(args.fix);
  if (!args.ab_knob.empty() && (!args.fix.empty() || args.ab_log.empty()))
    throw CompileError("--ab needs --ab-log and goes without --fix");
  const search::LoadResult ab_log =
      args.ab_knob.empty() ? search::LoadResult{} : search::TuningLog::load(args.ab_log, true);
  const search::LoadResult start_log =
      args.start_log.empty() ? search::LoadResult{} : search::TuningLog::load(args.start_log, true);
  if (!args.skip_suite) {
    options.log_path = args.out_dir + "/tuning.jsonl";
    for (const SuiteEntry& entry : suite()) {
      if (!selected(entry, args.only)) continue;
      std::vector<Kernel> kernels;
      try {
        kernels = kernels_of(entry);
      } catch (const CompileError& error) {
        std::printf("%-44s unsupported: %.80s\n",
                    te::instance_name(te::workload_info(entry.workload), entry.shape).c_str(), error.what());
        continue;
      }
      for (const Kernel& kernel : kernels) {
        if (args.fused_only && !kernel.fused_b2b()) continue;
        try {
          Outcome outcome =
              tune_kernel(kernel, args.ab_knob.empty() ? options : ab_options(kernel, ab_log, args, options),
                          30, start_log.records);
          print_row(outcome.summary);
          report["suite"].push_back(outcome.summary);
        } catch (const std::exception& error) {
          std::printf("%-44s FAILED: %s\n", kernel.name.c_str(), error.what());
        }
      }
    }
  }
  for (const std::string& name : args.sweep) {
    search::TuneOptions exhaustive = options;
    exhaustive.exhaustive = true;
    exhaustive.seconds = 0;
    exhaustive.log_path = args.out_dir + "/sweeps.jsonl";
    search::TuneOptions searched = options;
    searched.log_path = args.out_dir + "/sweep_searched.jsonl";
    const Outcome all = tune_kernel(find_kernel(name), exhaustive);
    const Outcome budget = tune_kernel(find_kernel(name), searched);
    const double gap = budget.summary["winner_us"].get<double>() / all.summary["winner_us"].get<double>() - 1;
    std::printf(
        "sweep %-38s exhaustive %9.1f us (%d measured, %.0fs)  tuner %9.1f us (%d measured, %.0fs)  gap "
        "%+.2f%%\n",
        name.c_str(), all.summary["winner_us"].get<double>(), all.summary["measured"].get<int>(),
        all.summary["wall_seconds"].get<double>(), budget.summary["winner_us"].get<double>(),
        budget.summary["measured"].get<int>(), budget.summary["wall_seconds"].get<double>(), 100 * gap);
    std::fflush(stdout);
    report["sweeps"].push_back(
        {{"name", name}, {"exhaustive", all.summary}, {"tuner", budget.summary}, {"gap", gap}});
  }
  if (!args.repeat.empty()) {
    search::TuneOptions again = options;
    again.log_path = args.out_dir + "/repeat.jsonl";
    const Outcome first = tune_kernel(find_kernel(args.repeat), again);
    const Outcome second = tune_kernel(find_kernel(args.repeat), again);
    const bool same = first.result.winner.schedule == second.result.winner.schedule;
    std::printf("repeat %-37s first %s %.1f us | second %s %.1f us | %s\n", args.repeat.c_str(),
                schedule::to_string(first.result.winner.schedule).c_str(), *first.result.winner.median_us,
                schedule::to_string(second.result.winner.schedule).c_str(), *second.result.winner.median_us,
                same ? "SAME WINNER" : "DIFFERENT WINNERS");
    report["repeat"] = {
        {"name", args.repeat}, {"first", first.summary}, {"second", second.summary}, {"same", same}};
  }
  if (!args.faults.empty()) {
    search::TuneOptions faulty = options;
    faulty.trials = 50;
    faulty.seconds = 0;
    faulty.log_path = args.out_dir + "/faults.jsonl";
    using search::Fault;
    faulty.faults = {{3, Fault::kOutOfBoundsWrite},  {9, Fault::kTrap},  {15, Fault::kHang},
                     {21, Fault::kOutOfBoundsWrite}, {30, Fault::kTrap}, {41, Fault::kHang}};
    const Outcome outcome = tune_kernel(find_kernel(args.faults), faulty, 10);
    std::printf("faults %-37s measured %d, statuses %s, workers started %d, winner %.1f us\n",
                args.faults.c_str(), outcome.summary["measured"].get<int>(),
                outcome.summary["statuses"].dump().c_str(), outcome.summary["workers_started"].get<int>(),
                outcome.summary["winner_us"].get<double>());
    report["faults"] = outcome.summary;
  }
  std::ofstream(args.out_dir + "/tune_summary.json") << report.dump(1) << "\n";
  return 0;
}

}  // namespace
}  // namespace comfuse::bench

int main(int argc, char** argv) {
  using comfuse::bench::split;
  comfuse::bench::Args args;
  // The output directory comes first: a flag there (--help included) would otherwise become a directory.
  if (argc < 2 || argv[1][0] == '-') {
    std::cerr
        << "usage: tune_suite OUT_DIR [--trials N] [--seconds S] [--only WORKLOAD,...] [--sweep NAME,...] "
           "[--repeat NAME] [--faults NAME] [--skip-suite] [--fused-only] [--fix KNOB=VALUE,...] "
           "[--ab KNOB --ab-log LOG] [--start-log LOG]\n";
    return 2;
  }
  args.out_dir = argv[1];
  std::filesystem::create_directories(args.out_dir);  // the logs are opened for appending, never created here
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--skip-suite" || flag == "--fused-only") {
      (flag == "--skip-suite" ? args.skip_suite : args.fused_only) = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "tune_suite: " << flag << " needs a value\n";
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--trials")
      args.trials = std::stoi(value);
    else if (flag == "--seconds")
      args.seconds = std::stod(value);
    else if (flag == "--only")
      args.only = split(value);
    else if (flag == "--fix")
      args.fix = split(value);
    else if (flag == "--ab")
      args.ab_knob = value;
    else if (flag == "--ab-log")
      args.ab_log = value;
    else if (flag == "--start-log")
      args.start_log = value;
    else if (flag == "--sweep")
      args.sweep = split(value);
    else if (flag == "--repeat")
      args.repeat = value;
    else if (flag == "--faults")
      args.faults = value;
    else {
      std::cerr << "tune_suite: unknown flag " << flag << "\n";
      return 2;
    }
  }
  try {
    return comfuse::bench::run(args);
  } catch (const std::exception& error) {
    std::cerr << "tune_suite: " << error.what() << "\n";
    return 1;
  }
}
