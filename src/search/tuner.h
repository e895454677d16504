// The autotuner: a budgeted search over a plan's schedule space, every candidate compiled (NVRTC on all
// cores), checked and measured (one at a time, through a Measurer), and logged; the winner by select_best.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_source.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/schedule.h"
#include "search/fault_injection.h"
#include "search/measurer.h"
#include "search/tuning_record.h"
#include "te/program.h"

namespace comfuse::search {

/// Compiles one candidate's source. The default goes through the on-disk kernel cache.
using CompileFunction = std::function<runtime::CompiledProgram(const codegen::KernelSource&)>;

/// Where a tuning run stands, reported after every event.
struct TuneProgress {
  int space = 0;    // legal schedules in the pruned space
  int planned = 0;  // candidates the budget allows
  int compiled = 0;
  int measured = 0;  // candidates measured, whatever their status
  int failed = 0;    // compile errors and every non-ok measurement
  int records_written = 0;
  std::optional<double> best_us;
  std::string best;  // schedule::to_string of the best so far
};

struct TuneOptions {
  int trials = 40;  // candidates to try at most (compiled or not); ignored when exhaustive
  // Wall-clock budget when positive: no compile or measurement starts after it. It counts from when the
  // space is ready (TuneResult::prepare_seconds is the time before).
  double seconds = 0;
  bool exhaustive = false;  // try the whole pruned space
  int repeats = 30;         // CUPTI samples per candidate
  int final_repeats = 100;  // samples when the candidates near the best are measured again
  int jobs = 0;             // NVRTC threads; 0: every core
  std::string log_path;     // each record is appended here as it is made; empty: no log
  CompileFunction compile;  // empty: KernelCache at its default directory, NVRTC options as compile()'s
  /// The NVRTC options recorded in each record (compiler.options); empty: runtime::nvrtc_options({}).
  std::vector<std::string> compile_options;
  /// Called after every record written and after every compile batch (so that a run whose compiles or first
  /// measurement take long shows where it is).
  std::function<void(const TuneProgress&)> progress;
  /// Faults injected into candidates by their ordinal (0-based, in the order candidates are emitted), to
  /// prove containment. Their records carry the status the fault produced.
  std::map<int, Fault> faults;
  schedule::TargetLimits limits;
  /// The schedules the tuner may try, of the legal space; empty: all of it. (To tune with some knobs fixed,
  /// or to replay measurements of a smaller space.)
  std::function<bool(const schedule::Schedule&)> admit;
  /// Schedules to try early (start_points: other searches' winners on this GPU). The first batch takes those
  /// whose canonical form for this plan is in the space (and admitted), best predicted first, after the
  /// default schedule and before the model's picks: a quarter of the batch at most.
  std::vector<schedule::Schedule> starts;
  /// Where an earlier search of this workload on this GPU ended (own_winner): taken first after the default
  /// schedule, ahead of the starts and outside their quarter, where its canonical form is in the space (and
  /// admitted). Measured again, it calibrates the model against the best form known, and its neighbours are
  /// open to the next batch: a search from the starts alone measures this one only if the model ranks it
  /// among the quarter.
  std::optional<schedule::Schedule> resume;
};

struct TuneResult {
  TuningRecord winner;
  std::vector<TuningRecord> records;  // every record made, in log order
  int space = 0;
  int compiled = 0, measured = 0, failed = 0;
  double seconds = 0;          // compiling and measuring, from when the space was ready
  double prepare_seconds = 0;  // building and ranking the space, before that
};

/// Appends a candidate's `record` to options.log_path (when set) and to `records`, updates `progress`
/// (records written; the fastest ok median and its schedule) and reports it to options.progress. Both tuners
/// use it.
void keep_record(TuningRecord record, const TuneOptions& options, std::vector<TuningRecord>& records,
                 TuneProgress& progress);

/// The result of a tuning run over `records`: the winner by select_best, the counts of `progress` and the
/// wall time. Throws CompileError "no <what> of <tried> for workload <key> ran correctly" with the first
/// three failures when no record is ok, and one saying that the time budget ran out when there is no record.
TuneResult finish_run(const std::vector<TuningRecord>& records, const TuneProgress& progress, double seconds,
                      const std::string& what, std::size_t tried, const std::string& key);

/// Tunes `program` on `measurer`'s device. Search: the schedule space pruned by legality; the default
/// schedule and the model's best few of each model family first; then, batch by batch, the untried
/// one-knob neighbours of the three fastest schedules and the best untried schedules, ranked by the cost
/// model calibrated on the measurements so far; until `trials` candidates (or `seconds`) are spent. The
/// schedules within twice the tie band of the fastest are measured again with `final_repeats` samples; the
/// winner is select_best over the run's records. A wrong answer from a schedule with a knob that rounds
/// (schedule::OptionalKnob::rounds) leaves that knob off for the rest of the run: the workload's tolerance
/// does not allow it (candidates of the same batch that have it are not measured, and their trials go back
/// to the budget); until then, at most a quarter of the first batch has such a knob. Compile errors and
/// failed measurements are records, never exceptions. Throws CompileError when the program cannot be planned
/// or no candidate ran correctly (with the first failures).
TuneResult tune(const te::Program& program, Measurer& measurer, const TuneOptions& options = {});

}  // namespace comfuse::search
