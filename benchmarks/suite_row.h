// One suite row made ready to run: planned (one fused kernel, or a back-to-back program as two), scheduled
// (replayed from a tuning log where it has the part, else the default heuristic) and compiled.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_source.h"
#include "runtime/fingerprint.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/fusion_plan.h"
#include "search/tuning_record.h"
#include "suite.h"

namespace comfuse::bench {

/// One kernel of a row.
struct Part {
  te::Program program;
  schedule::FusionPlan plan;
  std::function<te::Program(std::int64_t rows)> rebuild;  // the same part with fewer rows
  codegen::KernelSource source;
  runtime::CompiledProgram compiled;
  std::string compile_error;
  bool from_log = false;
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
};

/// Plans and schedules `entry`. `variant` "ping_pong" forces ping-pong warp roles on reduction plans where
/// legal (and ignores the log); `tuned` are the records of the tuning log (empty: none).
Row prepare_row(const SuiteEntry& entry, const std::string& variant, const std::vector<search::TuningRecord>& tuned,
                const runtime::DeviceFingerprint& target);

/// Compiles every part of every supported row with NVRTC on all cores; failures go to Row::compile_error.
void compile_rows(std::vector<Row>& rows);

}  // namespace comfuse::bench
