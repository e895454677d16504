// Shared test data for the tuning log and replay tests: real records of a small post-LN workload.
#pragma once

#include "codegen/kernel_source.h"
#include "comfuse/version.h"
#include "schedule/fusion_plan.h"
#include "search/tuning_record.h"
#include "support/sha256.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::search {

inline runtime::DeviceFingerprint h200() {
  runtime::DeviceFingerprint f;
  f.arch = "sm_90a";
  f.name = "NVIDIA H200";
  f.cc_major = 9;
  f.cc_minor = 0;
  f.sms = 132;
  f.driver = "580.159.04";
  f.driver_cuda = "13.0";
  f.cuda = "13.0";
  f.nvrtc = "13.0.88";
  return f;
}

inline te::Program small_post_layernorm() {
  return te::build_workload("post_layernorm", {{"M", 64}, {"K", 64}, {"N", 128}});
}

/// An ok record of the default schedule with the given median.
inline TuningRecord make_record(double median_us, RecordStatus status = RecordStatus::kOk) {
  te::Program program = small_post_layernorm();
  const std::string key = te::workload_key(program);
  TuningRecord r(Workload{key, std::move(program)});
  r.target = h200();
  r.compiler.comfuse = kVersion;
  r.compiler.options = {"--std=c++17", "-arch=sm_90a"};
  const schedule::FusionPlan plan = schedule::plan_fusion(r.workload.program);
  r.schedule = schedule::default_schedule(plan);
  r.status = status;
  if (status != RecordStatus::kOk) r.error = "it failed";
  if (status == RecordStatus::kOk) {
    r.times_us = {median_us, median_us + 0.5, median_us - 0.25};
    r.median_us = median_us;
  }
  r.source_sha256 = sha256_hex(codegen::emit_kernel(plan, r.schedule, r.workload.key).source);
  r.timestamp = "2025-01-31T12:00:00Z";
  return r;
}

}  // namespace comfuse::search
