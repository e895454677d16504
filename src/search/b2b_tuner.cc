// The exhaustive tuner of the fused back-to-back kernel.
#include "search/b2b_tuner.h"

#include <algorithm>
#include <chrono>

#include "codegen/b2b_emitter.h"
#include "comfuse/version.h"
#include "runtime/kernel_timer.h"
#include "search/compile_candidates.h"
#include "search/selection.h"
#include "search/tuning_log.h"
#include "support/error.h"
#include "support/sha256.h"
#include "te/json.h"

namespace comfuse::search {
namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  schedule::B2BSchedule schedule;
  codegen::KernelSource kernel;
  std::optional<runtime::CompiledProgram> compiled;
  std::string error;
};

class B2BTuner {
 public:
  B2BTuner(const te::Program& program, Measurer& measurer, const TuneOptions& options)
      : options_(options),
        measurer_(measurer),
        program_(program),
        key_(te::workload_key(program)),
        plan_(schedule::plan_b2b(program)),
        target_(measurer.target()),
        start_(Clock::now()) {
    compile_options_ = options.compile_options.empty() ? runtime::nvrtc_options({}) : options.compile_options;
    const std::vector<schedule::B2BSchedule> space = schedule::b2b_schedule_space(plan_);
    if (space.empty()) {
      // Say why: the kernel does not take this program, or even the default schedule does not fit it.
      codegen::check_b2b_supported(plan_);
      schedule::check_legal(plan_, schedule::B2BSchedule{});
      throw CompileError("fused back-to-back kernel: no schedule fits workload " + key_);
    }
    for (const schedule::B2BSchedule& s : space) {
      Candidate c;
      c.schedule = s;
      c.kernel = codegen::emit_b2b_kernel(plan_, s, key_);  // a CompileError here refuses the program
      candidates_.push_back(std::move(c));
    }
    progress_.space = progress_.planned = static_cast<int>(candidates_.size());
  }

  TuneResult run() {
    compile();
    for (Candidate& c : candidates_) {
      if (!c.compiled || over_budget()) continue;
      measure(c, options_.repeats);
      ++progress_.measured;
    }
    remeasure_contenders();
    return finish_run(records_, progress_, std::chrono::duration<double>(Clock::now() - start_).count(),
                      "fused back-to-back candidate", candidates_.size(), key_);
  }

 private:
  bool over_budget() const {
    return options_.seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - start_).count() > options_.seconds;
  }

  void compile() {
    compile_candidates(candidates_, options_);
    for (const Candidate& c : candidates_) {
      if (c.compiled) {
        ++progress_.compiled;
      } else {
        ++progress_.failed;
        write(record(c, RecordStatus::kCompileError, c.error.substr(0, 4000), {}));
      }
    }
    if (options_.progress) options_.progress(progress_);  // compiled, before the first measurement
  }

  void measure(const Candidate& c, int repeats) {
    MeasureRequest request;
    request.compiled = &*c.compiled;
    request.repeats = repeats;
    request.b2b = c.schedule;
    const Measurement m = measurer_.measure(request);
    if (m.status != RecordStatus::kOk) ++progress_.failed;
    write(record(c, m.status, m.error, m.times_us));
  }

  // The contenders (search/selection.h) measured again with more samples.
  void remeasure_contenders() {
    if (over_budget()) return;
    std::vector<const Candidate*> again;  // found before measuring: measuring adds records
    for (const TuningRecord* r : contenders(records_)) {
      for (const Candidate& c : candidates_) {
        if (c.schedule == *r->b2b) again.push_back(&c);
      }
    }
    for (const Candidate* c : again) measure(*c, options_.final_repeats);
  }

  TuningRecord record(const Candidate& c, RecordStatus status, const std::string& error,
                      std::vector<double> times) const {
    TuningRecord r =
        candidate_record(Workload{key_, program_}, target_, CompilerInfo{kVersion, compile_options_}, status,
                         error, std::move(times), c.kernel.source);
    r.b2b = c.schedule;
    return r;
  }

  void write(TuningRecord r) { keep_record(std::move(r), options_, records_, progress_); }

  const TuneOptions& options_;
  Measurer& measurer_;
  te::Program program_;
  std::string key_;
  schedule::B2BPlan plan_;
  runtime::DeviceFingerprint target_;
  Clock::time_point start_;
  std::vector<std::string> compile_options_;
  std::vector<Candidate> candidates_;
  std::vector<TuningRecord> records_;
  TuneProgress progress_;
};

}  // namespace

TuneResult tune_b2b(const te::Program& program, Measurer& measurer, const TuneOptions& options) {
  return B2BTuner(program, measurer, options).run();
}

}  // namespace comfuse::search
