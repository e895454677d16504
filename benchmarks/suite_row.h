// One suite row made ready to run: planned (one fused kernel, or a back-to-back program as two), scheduled
// (replayed from a tuning log where it has the part, else the default heuristic) and compiled.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_source.h"
#include "runtime/fingerprint.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/fusion_plan.h"
#include "search/replay.h"
#include "search/tuning_record.h"
#include "suite.h"

namespace comfuse::bench {

/// One kernel of a row.
struct Part {
  te::Program program;
  schedule::FusionPlan plan;
  codegen::KernelSource source;
  runtime::CompiledProgram compiled;
  std::string compile_error;
  bool from_log = false;
};

/// The fused back-to-back kernel of a row that otherwise runs as two kernels (bench_suite --b2b-fused).
struct FusedB2B {
  explicit FusedB2B(te::Program whole) : program(std::move(whole)) {}
  te::Program program;  // the program the source was emitted from: its tensors are the kernel's parameters
  codegen::KernelSource source;
  runtime::CompiledProgram compiled;
  std::string unsupported;  // why it was not emitted, or empty
  std::string compile_error;
  bool from_log = false;  // the tuning log's winner (else the default schedule)
};

struct Row {
  SuiteEntry entry;
  std::string name;
  std::int64_t flops = 0;
  std::string unsupported;  // why comfuse cannot run it, or empty
  std::vector<Part> parts;  // one fused kernel, or GEMM1 (+ tiles) then GEMM2 (+ epilogue)
  std::string compile_error;
  std::string schedule_source;
  std::optional<double> tune_seconds;  // from the log's timestamps: first to last record of the parts' keys
  std::optional<FusedB2B> fused_b2b;   // two-kernel rows, when asked for
};

/// Plans and schedules `entry`. `variant` "ping_pong" forces ping-pong warp roles on reduction plans where
/// legal (and ignores the log); `tuned` are the records of the tuning log (empty: none). With `b2b_fused`,
/// rows that run as two kernels also get the fused back-to-back kernel (default B2BSchedule). `replay`: how
/// records are matched to `target` (search::replay).
Row prepare_row(const SuiteEntry& entry, const std::string& variant,
                const std::vector<search::TuningRecord>& tuned, const runtime::DeviceFingerprint& target,
                bool b2b_fused = false, const search::ReplayOptions& replay = {});

/// Compiles every part of every supported row with NVRTC on all cores; failures go to Row::compile_error.
void compile_rows(std::vector<Row>& rows);

}  // namespace comfuse::bench
