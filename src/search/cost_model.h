// An analytic cost model of a fused kernel under a schedule, calibrated by the measurements of a tuning run.
// It ranks candidates before any is compiled; it never replaces a measurement.
#pragma once

#include <map>
#include <string>

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
/// tile's mainloop under ping-pong warp roles, serial otherwise — times the waves of CTAs; at least the
/// compulsory device-memory time.
CostEstimate estimate(const schedule::FusionPlan& plan, const schedule::Schedule& schedule,
                      const MachineModel& machine = {});

/// The model family of a schedule: warp roles, where carried values live, and whether a cluster exchanges
/// reductions. Measurements calibrate each family separately.
std::string model_family(const schedule::FusionPlan& plan, const schedule::Schedule& schedule);

/// The model corrected by measurements: each prediction is scaled by the geometric mean of measured over
/// estimated time of the measured schedules of its family, or of all measured schedules when its family
/// has none yet.
class CalibratedModel {
 public:
  CalibratedModel(const schedule::FusionPlan& plan, MachineModel machine) : plan_(&plan), machine_(machine) {}

  double predict_us(const schedule::Schedule& schedule) const;
  /// What predict_us multiplies the raw estimate by for schedules of `family` (model_family): the geometric
  /// mean of the family's measured/estimated ratios, else of all of them, else 1. For callers that keep the
  /// raw estimates and families of a whole space.
  double calibration(const std::string& family) const;
  /// Records a measured median for `schedule`.
  void observe(const schedule::Schedule& schedule, double measured_us);

 private:
  struct LogSum {
    double sum = 0;
    int count = 0;
  };
  const schedule::FusionPlan* plan_;
  MachineModel machine_;
  std::map<std::string, LogSum> families_;
  LogSum all_;
};

}  // namespace comfuse::search
