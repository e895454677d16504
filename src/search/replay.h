// Replay: the best record of a tuning log for a program and a target, regenerated and checked as a kernel.
#pragma once

#include <vector>

#include "codegen/kernel_source.h"
#include "runtime/fingerprint.h"
#include "search/tuning_record.h"
#include "te/program.h"

namespace comfuse::search {

struct ReplayOptions {
  /// Replay a record measured on another GPU, driver, CUDA, NVRTC or comfuse version.
  bool allow_target_mismatch = false;
};

struct ReplayResult {
  TuningRecord record;           // the record replayed
  codegen::KernelSource kernel;  // regenerated from `program` and the record's schedule
};

/// The kernel `record`'s schedule generates for `program` (whose key the record carries): the fused B2B
/// kernel for a back-to-back record, else the fused-GEMM kernel. Throws CompileError for an illegal schedule.
codegen::KernelSource regenerate(const TuningRecord& record, const te::Program& program);

/// Picks the winning `ok` record for te::workload_key(program) by select_best (the rule the tuner uses)
/// among those whose target (name, arch, cc, sms, driver, cuda, nvrtc) matches `target` and whose
/// compiler.comfuse is of this comfuse release (the part of kVersion before '+'). Re-plans `program`, checks
/// the schedule's legality, regenerates the source and checks its SHA-256 against the record's source_sha256.
/// Only the record's typed schedule reaches the source. CompileErrors: no record (or no ok record) for the
/// key, naming it; every ok record for another target, naming the first field that differs in the fastest of
/// them (`target.name differs: log has 'NVIDIA H100', this machine is 'NVIDIA H200'`) unless
/// options.allow_target_mismatch; an illegal schedule; `the generated source differs from the log's: comfuse
/// changed? (log X, now Y)`. A back-to-back record ("kernel": "b2b") regenerates the fused B2B kernel.
ReplayResult replay(const std::vector<TuningRecord>& records, const te::Program& program,
                    const runtime::DeviceFingerprint& target, const ReplayOptions& options = {});

}  // namespace comfuse::search
