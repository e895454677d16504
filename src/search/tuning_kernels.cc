// Which kernels a workload is tuned as.
#include "search/tuning_kernels.h"

#include <optional>

#include "codegen/b2b_support.h"
#include "schedule/b2b_plan.h"
#include "support/error.h"

namespace comfuse::search {
namespace {

// The fused back-to-back kernel of the whole workload, where the planner and the generator take it (else
// nullopt, with the reason in `why`).
std::optional<TuningKernel> fused_b2b(const std::string& name, const te::Shape& shape, std::string* why) {
  te::Program program = te::build_workload(name, shape);
  if (std::optional<std::string> refusal = codegen::b2b_kernel_refusal(program)) {
    *why = *refusal;
    return std::nullopt;
  }
  return TuningKernel{TuningKernel::Role::kFusedB2B, std::move(program)};
}

}  // namespace

std::vector<TuningKernel> tuning_kernels(const std::string& name, const te::Shape& shape) {
  std::vector<te::Program> programs;
  std::string why_not_fused;
  try {
    programs = schedule::kernel_programs(te::build_workload(name, shape));
  } catch (const CompileError& error) {
    if (std::optional<TuningKernel> fused = fused_b2b(name, shape, &why_not_fused)) return {*fused};
    throw CompileError(std::string(error.what()) + "; " + why_not_fused);  // why_not_fused names the kernel
  }
  std::vector<TuningKernel> kernels;
  for (std::size_t index = 0; index < programs.size(); ++index) {
    const TuningKernel::Role role = programs.size() == 1 ? TuningKernel::Role::kWhole
                                    : index == 0         ? TuningKernel::Role::kFirstPart
                                                         : TuningKernel::Role::kSecondPart;
    kernels.push_back({role, programs[index]});
  }
  // A back-to-back workload is also tuned as the fused kernel; the guard then picks a plan from the records.
  if (programs.size() == 2) {
    if (std::optional<TuningKernel> fused = fused_b2b(name, shape, &why_not_fused)) kernels.push_back(*fused);
  }
  return kernels;
}

}  // namespace comfuse::search
