// What the fused back-to-back kernel takes: the emitter's refusals, stated once.
#include "codegen/b2b_support.h"

#include "support/error.h"

namespace comfuse::codegen {
namespace {

constexpr int kMaxK = 256;  // X's tile stays in shared memory for the whole row block

}  // namespace

void check_b2b_supported(const schedule::B2BPlan& plan) {
  auto refuse = [](const std::string& why) { throw CompileError("fused back-to-back kernel: " + why); };
  const auto& first = plan.first;
  const auto& second = plan.second;
  if (first.batch.size() > 1) {
    refuse("'" + first.tensor.name() + "' has " + std::to_string(first.batch.size()) +
           " batch axes: one at most");
  }
  if (first.batch != second.batch) refuse("the two contractions have different batch axes");
  if (!first.b_k_major) refuse("'" + first.b.name() + "' must be laid out [rows, K]");
  if (second.n > 256 || second.n % 8 != 0) {
    refuse("GEMM2 has O=" + std::to_string(second.n) +
           " columns: one warpgroup's accumulator holds a multiple of 8 up to 256");
  }
  if (!second.b_k_major && second.n % 64 != 0) {
    refuse("'" + second.b.name() + "' is [K, O] with O=" + std::to_string(second.n) +
           ": it is read in boxes of 64 columns, so O must be a multiple of 64");
  }
  if (first.k % 8 != 0)
    refuse("K=" + std::to_string(first.k) + " must be a multiple of 8 (16-byte TMA rows)");
  if (second.b_k_major && first.n % 8 != 0) {
    refuse("N=" + std::to_string(first.n) + " must be a multiple of 8: '" + second.b.name() +
           "' is [O, N], read in 16-byte rows");
  }
  if (first.k > kMaxK) {
    refuse("K=" + std::to_string(first.k) + " is above " + std::to_string(kMaxK) +
           ": the kernel keeps X's [BM, K] tile in shared memory");
  }
  const te::DType type = first.a.dtype();
  for (const te::Tensor& operand : {first.b, second.b}) {
    if (operand.dtype() != type)
      refuse("operands mix " + std::string(te::dtype_name(type)) + " and " +
             std::string(te::dtype_name(operand.dtype())));
  }
  if (plan.rounded_to != type) {
    refuse("GEMM2's operand is rounded to " + std::string(te::dtype_name(plan.rounded_to)) + ", not to the " +
           std::string(te::dtype_name(type)) + " of the other operands");
  }
  for (const te::Tensor& t : plan.tiles) {
    for (const te::Tensor& read : te::Program::reads_of(t)) {
      if (read.is_placeholder())
        refuse("tile '" + t.name() + "' reads input '" + read.name() + "': not supported yet");
    }
  }
  for (const te::Tensor& t : plan.epilogue) {
    for (const te::Tensor& read : te::Program::reads_of(t)) {
      if (read.is_placeholder())
        refuse("epilogue compute '" + t.name() + "' reads input '" + read.name() + "': not supported yet");
    }
  }
  if (const std::size_t maxima = plan.running_maxima().size(); plan.online() && maxima != 1)
    refuse(std::to_string(maxima) + " running maxima: the kernel keeps one");
}

std::optional<std::string> b2b_kernel_refusal(const te::Program& program) {
  try {
    check_b2b_supported(schedule::plan_b2b(program));
    return std::nullopt;
  } catch (const CompileError& error) {
    return error.what();
  }
}

}  // namespace comfuse::codegen
