// An analytic cost model of a fused kernel under a schedule, calibrated by the measurements of a tuning run.
// It ranks candidates before any is compiled; it never replaces a measurement.
#pragma once

#include <string>
#include <vector>

#include "runtime/fingerprint.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"

namespace comfuse::search {

/// The machine figures the model uses. The defaults are the H200's (measured ceilings from DESIGN.md).
struct MachineModel {
  int sms = 132;
  double tensor_tflops = 760;     // dense bf16 wgmma throughput a well-fed kernel reaches
  double dram_gbps = 4240;        // device memory bandwidth
  double l2_gbps = 10000;         // L2 to SM bandwidth, all SMs together
  double fp32_gops_per_sm = 250;  // f32 operations per second per SM, in G (128 lanes at ~1.98 GHz)
  double launch_us = 3;           // launch and ramp-up of a kernel
  double cta_start_us = 1.5;      // a CTA's start: barrier set-up and the pipeline's first TMA round trip
  // A finish kernel's rate walking a row two columns a lane a load, against its rate in 16-byte words
  // (wide_finish), over a 16-bit stash and an f32 one: wide_finish's H200 A/B (NOTES, Change 40) ran the
  // post-LN and softmax rows with 16-bit stashes 0.69-0.73 as fast without it, GELU-LN's f32 stash 0.89.
  double pairs_walk_rate_16 = 0.72;
  double pairs_walk_rate_32 = 0.9;
};

/// The model of `target`: its SM count, H200 figures for the rest.
MachineModel machine_model(const runtime::DeviceFingerprint& target);

/// The parts of one estimate, in microseconds.
struct CostEstimate {
  double total_us = 0;
  double mainloop_us = 0;  // tensor-core time of the busiest CTA, waves included
  double epilogue_us = 0;  // epilogue arithmetic and traffic not hidden under the mainloop
  double dram_us = 0;      // the kernel's compulsory device-memory traffic at full bandwidth
  double waves = 0;        // CTAs over the CTAs the GPU runs at once
};

/// Estimates the kernel's time: per CTA, the tensor-core time of its tiles (wgmma efficiency by tile
/// shape and consumer warpgroups, operand feed from L2, pipeline depth), plus the epilogue (f32 arithmetic
/// per element, epilogue input/output and stash traffic, reduction exchanges) — overlapped with the next
/// tile's mainloop under ping-pong warp roles, serial otherwise; with row reductions in the kernel, the
/// stages after the first barrier wait for whole rows and overlap nothing of their row block — times the
/// waves of CTAs, plus a deferred reduction's finish kernel; at least the compulsory device-memory time.
CostEstimate estimate(const schedule::FusionPlan& plan, const schedule::Schedule& schedule,
                      const MachineModel& machine = {});

/// The structural family of a schedule: warp roles and rows, where carried values live, where reductions
/// combine, and whether a softmax's stash holds its terms (the other optional knobs left out). A tuning's
/// first measurements cover the families before they cover the knobs within one.
std::string model_family(const schedule::FusionPlan& plan, const schedule::Schedule& schedule);

/// The model corrected by measurements: log(measured / estimated) is fitted, over the schedules measured so
/// far, as a sum of one weight per schedule feature (ridge regression: each knob's weight is pulled toward 0,
/// the intercept hardly), and each prediction is scaled by exp of its features' weights. So what one
/// measurement teaches about a knob (a persistent grid that loses, a stash that costs more than estimated)
/// carries over to the unmeasured schedules that share it.
class CalibratedModel {
 public:
  CalibratedModel(const schedule::FusionPlan& plan, MachineModel machine) : plan_(&plan), machine_(machine) {}

  double predict_us(const schedule::Schedule& schedule) const;
  /// What predict_us multiplies the raw estimate by for `schedule`: exp of its features' learned weights (1
  /// before any measurement). For callers that keep the raw estimates of a whole space.
  double calibration(const schedule::Schedule& schedule) const;
  /// Records a measured median for `schedule` (the weights are fitted again when next asked for).
  void observe(const schedule::Schedule& schedule, double measured_us);

 private:
  const std::vector<double>& weights() const;

  const schedule::FusionPlan* plan_;
  MachineModel machine_;
  int observed_ = 0;
  // The ridge regression's normal equations over the features (calibration_features), summed as measurements
  // come: X^T X and X^T y with y = log(measured / estimated).
  std::vector<double> gram_, moment_;
  mutable std::vector<double> weights_;  // solved from them on demand; empty when out of date
};

/// The indicator features the calibration learns a weight for: an intercept, then warp roles, BM, BN's range,
/// stages, cluster size, where carried tiles live, the raster group and every optional knob. Returns the
/// indices of those `schedule` has; `count` receives how many there are in all.
std::vector<int> calibration_features(const schedule::Schedule& schedule, int* count = nullptr);

}  // namespace comfuse::search
