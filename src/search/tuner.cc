// The search strategy, parallel compilation, measurement through the Measurer, and the log.
#include "search/tuner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "codegen/kernel_source.h"
#include "comfuse/version.h"
#include "runtime/kernel_timer.h"
#include "schedule/fusion_plan.h"
#include "search/compile_candidates.h"
#include "search/cost_model.h"
#include "search/search_space.h"
#include "search/selection.h"
#include "search/tuning_log.h"
#include "support/error.h"
#include "support/parallel.h"
#include "te/json.h"

namespace comfuse::search {
namespace {

using Clock = std::chrono::steady_clock;
using schedule::Schedule;

struct Candidate {
  Schedule schedule;
  int ordinal = 0;
  codegen::KernelSource kernel;
  std::optional<runtime::CompiledProgram> compiled;
  std::string error;  // why it did not compile
};

// A schedule of the space with what ranking it needs, worked out once, on every core: its model family and
// raw estimate (spaces run to 10^5 schedules, ranked again before every batch).
struct SpaceEntry {
  Schedule schedule;
  std::string family;
  double raw_us = 0;
};

std::vector<SpaceEntry> admitted(const schedule::FusionPlan& plan, const std::vector<Schedule>& space,
                                 const std::function<bool(const Schedule&)>& admit,
                                 const MachineModel& machine) {
  std::vector<SpaceEntry> entries;
  entries.reserve(space.size());
  for (const Schedule& s : space) {
    if (!admit || admit(s)) entries.push_back({s, "", 0});
  }
  support::parallel_each(entries.size(), [&](std::size_t i) {
    SpaceEntry& e = entries[i];
    e.family = model_family(plan, e.schedule);
    e.raw_us = estimate(plan, e.schedule, machine).total_us;
  });
  return entries;
}

class Tuner {
 public:
  Tuner(const te::Program& program, Measurer& measurer, const TuneOptions& options)
      : options_(options),
        measurer_(measurer),
        prepare_start_(Clock::now()),
        program_(program),
        key_(te::workload_key(program)),
        plan_(schedule::plan_fusion(program)),
        target_(measurer.target()),
        space_(admitted(plan_, schedule_space(plan_, options.limits), options.admit, machine_model(target_))),
        model_(plan_, machine_model(target_)),
        start_(Clock::now()) {
    compile_options_ = options.compile_options.empty() ? runtime::nvrtc_options({}) : options.compile_options;
    progress_.space = static_cast<int>(space_.size());
    progress_.planned = options.exhaustive ? progress_.space : std::min(options.trials, progress_.space);
    jobs_ =
        options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  TuneResult run() {
    std::vector<Schedule> batch = first_batch();
    while (!batch.empty()) {
      std::vector<Candidate> candidates = emit(batch);
      compile(candidates);
      for (Candidate& c : candidates) {
        if (!c.compiled) continue;
        // Past the budget only while nothing has measured correct: a run that compiled its first batch
        // late still ends with a winner (a measurement takes a fraction of a compile).
        if (past(0.85) && has_winner()) break;
        if (ruled_out(c.schedule)) {
          // A rounding knob failed since this batch was planned: the trial goes back to the budget.
          tried_.erase(c.schedule);
          continue;
        }
        measure(c, options_.repeats, true);
        kept_.emplace(c.schedule, std::move(c));
      }
      if (past(0.85)) break;
      batch = next_batch();
    }
    remeasure_contenders();
    return finish();
  }

 private:
  // True once `fraction` of the seconds budget is spent (never without a budget).
  bool past(double fraction) const {
    if (options_.seconds <= 0) return false;
    return std::chrono::duration<double>(Clock::now() - start_).count() > fraction * options_.seconds;
  }

  int trials_left() const {
    return options_.exhaustive ? static_cast<int>(space_.size())
                               : options_.trials - static_cast<int>(tried_.size());
  }

  int batch_size() const { return std::max(jobs_, 8); }

  // Untried schedules of the space, best predicted first (canonical order among equals).
  std::vector<const SpaceEntry*> ranked_untried() const {
    std::vector<std::pair<double, const SpaceEntry*>> ranked;
    for (const SpaceEntry& e : space_) {
      if (!tried_.count(e.schedule)) ranked.emplace_back(e.raw_us * model_.calibration(e.schedule), &e);
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<const SpaceEntry*> out;
    for (const auto& entry : ranked) out.push_back(entry.second);
    return out;
  }

  // Adds `s` to `batch` when it is new and the budget allows.
  void take(std::vector<Schedule>& batch, const Schedule& s, std::size_t limit) {
    if (batch.size() >= limit || static_cast<int>(batch.size()) >= trials_left()) return;
    if (options_.admit && !options_.admit(s)) return;
    if (ruled_out(s)) return;
    if (tried_.count(s)) return;
    for (const Schedule& b : batch) {
      if (b == s) return;
    }
    batch.push_back(s);
  }

  std::vector<Schedule> first_batch() {
    std::vector<Schedule> batch;
    const std::vector<const SpaceEntry*> ranked = ranked_untried();
    if (options_.exhaustive) {
      for (const SpaceEntry* e : ranked) batch.push_back(e->schedule);
      return batch;
    }
    // Half the trials, but at most two compile batches, and one under a seconds budget: the first
    // measurements must come early, to calibrate the model and to leave a winner when time runs out (a
    // softcapped softmax's kernels take 20-40 s each to compile).
    const int compile_rounds = options_.seconds > 0 ? 1 : 2;
    const std::size_t limit = static_cast<std::size_t>(
        std::min(options_.trials,
                 std::max(batch_size(), std::min(options_.trials / 2, compile_rounds * batch_size()))));
    take(batch, canonical(plan_, schedule::default_schedule(plan_, options_.limits)), limit);
    // At most a quarter of it with a knob that rounds past an ulp: until one is measured, the workload's
    // tolerance may refuse them all, and a batch of them would be compiled for nothing. (A division by a
    // constant as a multiplication goes free: it is within an ulp, and the IEEE division it replaces makes a
    // softcapped softmax's kernels 4x slower to compile, 13.8 s against 3.2 s on two cores.)
    const std::size_t rounding_cap = std::max<std::size_t>(1, limit / 4);
    std::size_t rounding = 0;
    auto offer = [&](const SpaceEntry* e) {
      const bool rounds = schedule::rounds_past_an_ulp(e->schedule);
      if (rounds && rounding >= rounding_cap) return;
      const std::size_t before = batch.size();
      take(batch, e->schedule, limit);
      if (rounds && batch.size() > before) ++rounding;
    };
    // Where this workload's last search ended (TuneOptions::resume), outside the cap above: it passed this
    // workload's tolerance when it won.
    if (const std::optional<Schedule> resume =
            options_.resume ? canonical_in_plan(*options_.resume) : std::nullopt) {
      if (std::any_of(ranked.begin(), ranked.end(),
                      [&](const SpaceEntry* e) { return e->schedule == *resume; }))
        take(batch, *resume, limit);
    }
    // Other searches' winners (TuneOptions::starts) next, a quarter of the batch at most; those that round
    // count toward the cap above.
    const std::size_t starts_cap = std::min(limit, batch.size() + std::max<std::size_t>(1, limit / 4));
    const std::set<Schedule> starts = canonical_starts();
    for (const SpaceEntry* e : ranked) {
      if (batch.size() >= starts_cap) break;
      if (starts.count(e->schedule)) offer(e);
    }
    // The best predicted of every family first, then the second best of each, then the rest: the raw
    // model's error differs by family (2-3x for reductions in the kernel, 1.2-1.5x deferred), so each needs
    // a measurement before the calibration can rank one against another. (A family's best is the best that
    // the batch takes: past the cap, not one that rounds.)
    std::map<std::string, int> taken;
    for (int round = 1; round <= 2; ++round) {
      for (const SpaceEntry* e : ranked) {
        if (taken[e->family] >= round) continue;
        const std::size_t before = batch.size();
        offer(e);
        if (batch.size() > before) ++taken[e->family];
      }
    }
    for (const SpaceEntry* e : ranked) offer(e);
    return batch;
  }

  // options_.starts in this plan's canonical form; first_batch offers those in the space, in the model's
  // order.
  std::set<Schedule> canonical_starts() const {
    std::set<Schedule> starts;
    for (const Schedule& start : options_.starts) {
      if (std::optional<Schedule> c = canonical_in_plan(start)) starts.insert(*c);
    }
    return starts;
  }

  // `start` in this plan's canonical form; none where it is another plan's, which this one cannot take.
  std::optional<Schedule> canonical_in_plan(const Schedule& start) const {
    try {
      return canonical(plan_, start);
    } catch (const CompileError&) {
      return std::nullopt;
    }
  }

  std::vector<Schedule> next_batch() {
    if (options_.exhaustive || trials_left() <= 0) return {};
    const std::size_t limit = static_cast<std::size_t>(batch_size());
    std::vector<Schedule> batch;
    // Neighbours of the three fastest, best predicted first.
    std::vector<const TuningRecord*> ok;
    for (const TuningRecord& r : records_) {
      if (r.status == RecordStatus::kOk && r.median_us) ok.push_back(&r);
    }
    std::stable_sort(ok.begin(), ok.end(), [](auto* a, auto* b) { return *a->median_us < *b->median_us; });
    std::vector<std::pair<double, Schedule>> near;
    for (std::size_t i = 0; i < ok.size() && i < 3; ++i) {
      for (const Schedule& n : neighbours(plan_, ok[i]->schedule, options_.limits)) {
        if (!tried_.count(n)) near.emplace_back(model_.predict_us(n), n);
      }
    }
    std::stable_sort(near.begin(), near.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [predicted, s] : near) take(batch, s, limit / 2 + limit % 2);
    for (const SpaceEntry* e : ranked_untried()) take(batch, e->schedule, limit);
    return batch;
  }

  std::vector<Candidate> emit(const std::vector<Schedule>& batch) {
    std::vector<Candidate> candidates;
    for (const Schedule& s : batch) {
      tried_.insert(s);
      Candidate c;
      c.schedule = s;
      c.ordinal = next_ordinal_++;
      try {
        c.kernel = codegen::emit_kernel(plan_, s, key_);
        if (auto fault = options_.faults.find(c.ordinal); fault != options_.faults.end()) {
          c.kernel.source = inject_fault(c.kernel.source, c.kernel.name, fault->second);
        }
      } catch (const std::exception& error) {
        c.error = error.what();
      }
      candidates.push_back(std::move(c));
    }
    return candidates;
  }

  void compile(std::vector<Candidate>& candidates) {
    // Stop starting compiles past 60% of the budget, to leave time to measure; but until the run has a winner
    // each job's first compile starts however late, so that a slow start (a loaded machine) still ends with
    // a measurement.
    const std::size_t always = has_winner() ? 0 : static_cast<std::size_t>(jobs_);
    compile_candidates(
        candidates, options_, [&] { return past(0.6); }, always);
    for (Candidate& c : candidates) {
      if (c.compiled) {
        ++progress_.compiled;
      } else if (!c.error.empty()) {
        ++progress_.failed;
        write(make_record(c, RecordStatus::kCompileError, c.error.substr(0, 4000), {}));
      }
    }
    if (options_.progress) options_.progress(progress_);  // the batch compiled, before its first measurement
  }

  void measure(const Candidate& c, int repeats, bool first_pass) {
    const Measurement m = measurer_.measure(MeasureRequest{c.schedule, &*c.compiled, repeats, std::nullopt});
    if (first_pass) ++progress_.measured;
    if (m.status != RecordStatus::kOk) ++progress_.failed;
    if (m.status == RecordStatus::kWrongAnswer) rule_out_rounding(c.schedule);
    write(make_record(c, m.status, m.error, m.times_us));
    if (m.status == RecordStatus::kOk && records_.back().median_us) {
      model_.observe(c.schedule, *records_.back().median_us);
    }
  }

  bool has_winner() const {
    return std::any_of(records_.begin(), records_.end(),
                       [](const TuningRecord& r) { return r.status == RecordStatus::kOk; });
  }

  bool ruled_out(const Schedule& s) const {
    return std::any_of(ruled_out_.begin(), ruled_out_.end(),
                       [&](const schedule::OptionalKnob* knob) { return s.*knob->field; });
  }

  // A wrong answer from a schedule with knobs that round: the rest of the run goes without those of them
  // that no correct measurement of this run had on. One that did (a resumed winner's approximate exp) is not
  // what failed, and ruling it out closed the winner's neighbours to a softmax search on the H200, after a
  // bf16 stash of its logits failed (benchmarks/NOTES.md, Change 81).
  void rule_out_rounding(const Schedule& s) {
    for (const schedule::OptionalKnob& knob : schedule::optional_knobs()) {
      if (!knob.rounds || !(s.*knob.field)) continue;
      const bool passed = std::any_of(records_.begin(), records_.end(), [&](const TuningRecord& r) {
        return r.status == RecordStatus::kOk && r.schedule.*knob.field;
      });
      if (!passed) ruled_out_.insert(&knob);
    }
  }

  // The contenders measured again with more samples, where at least two are tied.
  void remeasure_contenders() {
    std::vector<Schedule> tied;  // copied: measuring appends to records_
    for (const TuningRecord* r : contenders(records_)) tied.push_back(r->schedule);
    if (tied.size() < 2 || past(0.95)) return;
    for (const Schedule& s : tied) measure(kept_.at(s), options_.final_repeats, false);
  }

  TuneResult finish() {
    TuneResult result =
        finish_run(records_, progress_, std::chrono::duration<double>(Clock::now() - start_).count(),
                   "candidate", tried_.size(), key_);
    result.prepare_seconds = std::chrono::duration<double>(start_ - prepare_start_).count();
    return result;
  }

  TuningRecord make_record(const Candidate& c, RecordStatus status, const std::string& error,
                           std::vector<double> times) const {
    TuningRecord r =
        candidate_record(Workload{key_, program_}, target_, CompilerInfo{kVersion, compile_options_}, status,
                         error, std::move(times), c.kernel.source);
    r.schedule = c.schedule;
    return r;
  }

  void write(TuningRecord record) { keep_record(std::move(record), options_, records_, progress_); }

  const TuneOptions& options_;
  Measurer& measurer_;
  // When preparing the space began: building and ranking it takes until start_.
  Clock::time_point prepare_start_;
  te::Program program_;
  std::string key_;
  schedule::FusionPlan plan_;
  runtime::DeviceFingerprint target_;
  std::vector<SpaceEntry> space_;
  CalibratedModel model_;
  // The run's clock, started once the space is ready: the seconds budget is for compiling and measuring.
  Clock::time_point start_;
  std::vector<std::string> compile_options_;
  int jobs_ = 1;
  int next_ordinal_ = 0;
  std::set<Schedule> tried_;
  // Knobs that round values (OptionalKnob::rounds) and gave a wrong answer: the workload's tolerance does not
  // allow them, so no further candidate takes them.
  std::set<const schedule::OptionalKnob*> ruled_out_;
  std::map<Schedule, Candidate> kept_;  // measured candidates by schedule, for re-measurement
  std::vector<TuningRecord> records_;
  TuneProgress progress_;
};

}  // namespace

TuneResult finish_run(const std::vector<TuningRecord>& records, const TuneProgress& progress, double seconds,
                      const std::string& what, std::size_t tried, const std::string& key) {
  if (records.empty()) {  // the time budget ran out before the first candidate was measured
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, "%.1f", seconds);
    throw CompileError("no " + what + " of " + std::to_string(tried) + " for workload " + key +
                       " was measured: the time budget ran out after " + elapsed + " s with " +
                       std::to_string(progress.compiled) + " compiled; give the run more seconds");
  }
  std::vector<const TuningRecord*> all;
  for (const TuningRecord& r : records) all.push_back(&r);
  const TuningRecord* best = select_best(all);
  if (best == nullptr) {
    std::string failures;
    for (std::size_t i = 0; i < records.size() && i < 3; ++i) {
      failures +=
          "\n  " + std::string(status_name(records[i].status)) + ": " + records[i].error.substr(0, 300);
    }
    throw CompileError("no " + what + " of " + std::to_string(tried) + " for workload " + key +
                       " ran correctly; the first failures:" + failures);
  }
  return TuneResult{*best,           records, progress.space, progress.compiled, progress.measured,
                    progress.failed, seconds};
}

void keep_record(TuningRecord record, const TuneOptions& options, std::vector<TuningRecord>& records,
                 TuneProgress& progress) {
  if (!options.log_path.empty()) TuningLog(options.log_path).append(record);
  records.push_back(std::move(record));
  ++progress.records_written;
  const TuningRecord& r = records.back();
  if (r.status == RecordStatus::kOk && r.median_us &&
      (!progress.best_us || *r.median_us < *progress.best_us)) {
    progress.best_us = r.median_us;
    progress.best = schedule_description(r);
  }
  if (options.progress) options.progress(progress);
}

TuneResult tune(const te::Program& program, Measurer& measurer, const TuneOptions& options) {
  return Tuner(program, measurer, options).run();
}

}  // namespace comfuse::search
