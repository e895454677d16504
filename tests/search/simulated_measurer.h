// A Measurer without a GPU: times from the cost model with a deterministic per-schedule perturbation, and
// failures chosen by the test. Lets the tuner's strategy, records and log be tested on the CPU.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "search/cost_model.h"
#include "search/measurer.h"
#include "search_fixture.h"

namespace comfuse::search {

class SimulatedMeasurer : public Measurer {
 public:
  explicit SimulatedMeasurer(const schedule::FusionPlan& plan) : plan_(plan) {}

  /// Makes measurements of schedules for which `fails` returns a status other than kOk fail with it.
  std::function<RecordStatus(const schedule::Schedule&)> fails;
  /// Time each measurement takes on the wall clock.
  std::chrono::milliseconds delay{0};
  int calls = 0;

  runtime::DeviceFingerprint target() override { return h200(); }

  Measurement measure(const MeasureRequest& request) override {
    ++calls;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    Measurement m;
    if (fails) m.status = fails(request.schedule);
    if (m.status != RecordStatus::kOk) {
      m.error = "simulated " + std::string(status_name(m.status));
      return m;
    }
    // The model's time, perturbed by up to +-20% by a hash of the schedule: the model's ranking is not the
    // truth, as on a real GPU.
    const double base = estimate(plan_, request.schedule).total_us;
    const std::size_t h = std::hash<std::string>{}(schedule::to_json(request.schedule).dump());
    const double truth = base * (0.8 + 0.4 * static_cast<double>(h % 1000) / 1000.0);
    for (int i = 0; i < request.repeats; ++i) m.times_us.push_back(truth * (1 + 0.001 * (i % 3)));
    return m;
  }

  std::optional<double> gemm_alone_us(int) override { return 1.0; }

 private:
  schedule::FusionPlan plan_;
};

/// A compile step that does not run NVRTC: the "cubin" is the source's hash. Sources containing `poison`
/// fail to compile.
inline runtime::CompiledProgram fake_compile(const codegen::KernelSource& kernel, const std::string& poison = "") {
  if (!poison.empty() && kernel.source.find(poison) != std::string::npos) {
    throw RuntimeError("nvrtcCompileProgram", 6, "simulated compile failure", "error: simulated");
  }
  runtime::CompiledProgram compiled;
  compiled.image = sha256_hex(kernel.source);
  return compiled;
}

}  // namespace comfuse::search
