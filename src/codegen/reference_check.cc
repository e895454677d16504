// Row-sampled comparison of GPU outputs with the CPU reference.
#include "codegen/reference_check.h"

#include <algorithm>
#include <sstream>

#include "te/row_slice.h"

namespace comfuse::codegen {
namespace {

te::HostBuffer slice_rows(const te::HostBuffer& full, std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> shape = full.shape();
  const std::int64_t row = full.numel() / shape[0];
  shape[0] = count;
  te::HostBuffer part(full.dtype(), shape);
  const auto* source = static_cast<const unsigned char*>(full.data());
  const std::size_t row_bytes = static_cast<std::size_t>(row) * te::dtype_bytes(full.dtype());
  std::copy_n(source + first * row_bytes, count * row_bytes, static_cast<unsigned char*>(part.data()));
  return part;
}

}  // namespace

ReferenceRows compute_reference(const te::Program& program, const std::vector<te::HostBuffer>& inputs,
                                std::int64_t full_rows, std::int64_t block_rows) {
  ReferenceRows reference;
  const std::int64_t M = program.outputs().front().shape().front();
  reference.rows = M;
  for (const te::Tensor& t : program.outputs()) reference.output_names.push_back(t.name());
  if (M <= full_rows) {
    reference.blocks.push_back({0, M});
  } else {
    const std::int64_t b = std::min(block_rows, M);
    reference.blocks = {{0, b}, {M / 2 - b / 2, b}, {M - b, b}};
  }
  for (auto [first, count] : reference.blocks) {
    if (count == M) {
      reference.outputs.push_back(te::evaluate(program, inputs));
      continue;
    }
    // The block's inputs: those it reads by row cut to its rows (their shapes changed), the others whole.
    const te::Program part = te::row_block(program, first, count);
    std::vector<te::HostBuffer> part_inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool by_row = part.inputs()[i].shape() != program.inputs()[i].shape();
      part_inputs.push_back(by_row ? slice_rows(inputs[i], first, count) : inputs[i]);
    }
    reference.outputs.push_back(te::evaluate(part, part_inputs));
  }
  return reference;
}

ReferenceCheck check_outputs(const ReferenceRows& reference, const std::vector<te::HostBuffer>& gpu_outputs,
                             double tolerance) {
  ReferenceCheck check;
  check.ok = true;
  std::ostringstream detail;
  for (std::size_t b = 0; b < reference.blocks.size(); ++b) {
    const auto [first, count] = reference.blocks[b];
    for (std::size_t o = 0; o < reference.outputs[b].size(); ++o) {
      const te::HostBuffer got =
          count == reference.rows ? gpu_outputs[o] : slice_rows(gpu_outputs[o], first, count);
      const te::Comparison cmp = te::compare(got, reference.outputs[b][o]);
      const bool ok = cmp.non_finite == 0 && cmp.rel_error <= tolerance;
      check.ok = check.ok && ok;
      check.max_rel_error = std::max(check.max_rel_error, cmp.rel_error);
      check.non_finite += cmp.non_finite;
      detail << (ok ? "ok   " : "FAIL ") << reference.output_names[o] << " rows " << first << "+" << count
             << " rel_err=" << cmp.rel_error << " max_abs=" << cmp.max_abs_error
             << " non_finite=" << cmp.non_finite << "\n";
    }
  }
  check.detail = detail.str();
  return check;
}

ReferenceCheck check_against_reference(const te::Program& program, const std::vector<te::HostBuffer>& inputs,
                                       const std::vector<te::HostBuffer>& gpu_outputs, double tolerance,
                                       std::int64_t full_rows) {
  return check_outputs(compute_reference(program, inputs, full_rows), gpu_outputs, tolerance);
}

}  // namespace comfuse::codegen
