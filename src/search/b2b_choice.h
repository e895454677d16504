// The profitability guard of the fused back-to-back kernel: from the tuning records, does a back-to-back
// program run as the fused kernel or as its two kernels?
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/fingerprint.h"
#include "search/replay.h"
#include "search/tuning_record.h"
#include "te/program.h"

namespace comfuse::search {

struct B2BChoice {
  bool fused = false;
  std::optional<ReplayResult> fused_kernel;    // the fused kernel's winning record, when it has one
  std::vector<ReplayResult> parts;             // the two kernels' winning records, when both have one
  std::optional<double> fused_us, unfused_us;  // the winners' medians; unfused: the two parts' sum
  std::string reason;                          // one line with the numbers
};

/// Replays the fused kernel's records (the whole program's key) and the two parts'
/// (schedule::kernel_programs) with `replay`'s rules and picks the plan: the fused kernel when it has a
/// winner and the two kernels have none or take longer together; else the two kernels. Throws CompileError
/// when neither has a winner for `target` (naming why each replay failed).
B2BChoice choose_b2b(const std::vector<TuningRecord>& records, const te::Program& program,
                     const runtime::DeviceFingerprint& target, const ReplayOptions& options = {});

}  // namespace comfuse::search
