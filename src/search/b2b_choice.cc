// Choosing between the fused back-to-back kernel and the two-kernel plan from measured records.
#include "search/b2b_choice.h"

#include <cstdio>

#include "codegen/b2b_support.h"
#include "schedule/b2b_plan.h"
#include "support/error.h"

namespace comfuse::search {
namespace {

std::string us(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f us", value);
  return text;
}

}  // namespace

B2BChoice choose_b2b(const std::vector<TuningRecord>& records, const te::Program& program,
                     const runtime::DeviceFingerprint& target, const ReplayOptions& options) {
  B2BChoice choice;
  std::string fused_why, parts_why;
  if (const std::optional<std::string> refusal = codegen::b2b_kernel_refusal(program)) {
    fused_why = *refusal;  // no record could exist: say why, not that there is none
  } else {
    try {
      choice.fused_kernel = replay(records, program, target, options);
      choice.fused_us = choice.fused_kernel->record.median_us;
    } catch (const CompileError& error) {
      fused_why = error.what();
    }
  }
  try {
    const std::vector<te::Program> parts = schedule::kernel_programs(program);
    if (parts.size() != 2) throw CompileError("the program runs as one fused-GEMM kernel, not back to back");
    double sum = 0;
    for (const te::Program& part : parts) {
      choice.parts.push_back(replay(records, part, target, options));
      sum += *choice.parts.back().record.median_us;
    }
    choice.unfused_us = sum;
  } catch (const CompileError& error) {
    choice.parts.clear();
    parts_why = error.what();
  }
  if (!choice.fused_us && !choice.unfused_us) {
    throw CompileError("no plan for this back-to-back workload: fused kernel: " + fused_why +
                       "; two kernels: " + parts_why);
  }
  if (!choice.unfused_us) {
    choice.fused = true;
    choice.reason = "fused kernel " + us(*choice.fused_us) + " (two kernels: " + parts_why + ")";
  } else if (!choice.fused_us) {
    choice.reason = "two kernels " + us(*choice.unfused_us) + " (fused kernel: " + fused_why + ")";
  } else {
    choice.fused = *choice.fused_us < *choice.unfused_us;
    const std::string both = us(*choice.fused_us) + " fused against " + us(*choice.unfused_us) +
                             " for the two kernels (" + us(*choice.parts[0].record.median_us) + " + " +
                             us(*choice.parts[1].record.median_us) + ")";
    choice.reason = (choice.fused ? "fused kernel: " : "two kernels: the fused kernel loses, ") + both;
  }
  return choice;
}

}  // namespace comfuse::search
