// A generated kernel compiled with NVRTC, loaded, and bound to device buffers: the bridge from codegen to the
// runtime. TMA descriptors for the anchor's operands are encoded here, from the buffers they describe.
#pragma once

#include <memory>
#include <vector>

#include "codegen/kernel_source.h"
#include "codegen/phase_trace.h"
#include "runtime/context.h"
#include "runtime/module.h"
#include "runtime/nvrtc_compiler.h"
#include "te/host_buffer.h"

namespace comfuse::codegen {

/// Device buffers for every input and output of a program, in program order, plus the kernel's stash.
struct DeviceBindings {
  std::vector<runtime::DeviceBuffer> inputs;   // program.inputs() order
  std::vector<runtime::DeviceBuffer> outputs;  // program.outputs() order
  std::unique_ptr<runtime::DeviceBuffer> stash;
  std::unique_ptr<runtime::DeviceBuffer> trace;  // a traced kernel's phase trace (zeroed by bind)
};

/// The outputs of `bindings` (bound for `program`, or for the whole program of a row-sliced kernel) copied to
/// the host, in program.outputs() order. Synchronise first.
std::vector<te::HostBuffer> download_outputs(const te::Program& program, const DeviceBindings& bindings);

/// Compiles `source` for sm_90a as FusedKernel's first constructor does; NVRTC failures are RuntimeErrors
/// with the log. Needs no device, and calls on several threads may run at once.
runtime::CompiledProgram compile_kernel_source(const KernelSource& source);

class FusedKernel {
 public:
  /// Compiles `source`, emitted for `program`, for sm_90a and loads it into `context`. NVRTC failures are
  /// RuntimeErrors with the log.
  FusedKernel(const runtime::Context& context, te::Program program, KernelSource source);
  /// Loads a program already compiled from `source` (e.g. compiled in parallel by the caller).
  FusedKernel(const runtime::Context& context, te::Program program, KernelSource source,
              runtime::CompiledProgram compiled);

  const KernelSource& source() const { return source_; }
  const runtime::CompiledProgram& compiled() const { return compiled_; }

  /// Allocates device buffers for the program's inputs and outputs and uploads `input_data` (one host pointer
  /// per input, in program order, each holding the input's elements in its dtype; nullptr leaves it unset).
  DeviceBindings bind(const std::vector<const void*>& input_data) const;
  /// Launches once on `stream` over `bindings`.
  void launch(const DeviceBindings& bindings, CUstream stream = nullptr) const;

  /// Row slices: this kernel's program is `whole` with its rows cut into equal slices (the same inputs and
  /// outputs in order, each row-indexed one with `whole`'s rows divided by the same count, the others the
  /// same), and one launch per slice runs `whole`. Binds buffers for `whole`'s inputs (uploading `input_data`
  /// as bind does) and outputs, with this kernel's stash, and returns the count of slices in `slices`. Only
  /// the shapes are compared (a tensor whose first extent is the kernel's rows and differs in `whole` is
  /// taken for row-indexed): `whole` must be the same program at more rows, as the workload's builder makes
  /// it. A CompileError names the first tensor whose shape is not such a slice.
  DeviceBindings bind_whole(const te::Program& whole, const std::vector<const void*>& input_data,
                            int* slices) const;
  /// Launches once on `stream` over slice `slice` of bindings from bind_whole: each row-indexed buffer at
  /// the slice's rows, the others (and the stash) whole.
  void launch_slice(const DeviceBindings& whole, int slice, CUstream stream = nullptr) const;

  /// CTAs a launch of the main kernel runs.
  int grid() const { return grid_; }
  /// A traced kernel's trace of the last launch over `bindings` (which must have finished), decoded; clear
  /// it before the launch to be read (decode_trace refuses a slot left unwritten). InternalError for a kernel
  /// emitted without EmitOptions::phase_trace.
  std::vector<TraceSlot> read_trace(const DeviceBindings& bindings) const;
  /// Zeroes the trace buffer of `bindings` (and waits until it is done).
  void clear_trace(const DeviceBindings& bindings) const;

 private:
  DeviceBindings bind_buffers(const te::Program& program, const std::vector<const void*>& input_data) const;
  CUtensorMap tensor_map(CUdeviceptr base, const te::Tensor& tensor, int box_rows) const;

  const runtime::Context& context_;
  te::Program program_;
  KernelSource source_;
  runtime::CompiledProgram compiled_;
  std::unique_ptr<runtime::Module> module_;
  std::unique_ptr<runtime::Function> function_;
  std::unique_ptr<runtime::Function> finish_;  // a deferred reduction's finish kernel, or null
  int grid_ = 0;  // CTAs a launch runs: the source's grid, or of a persistent one as many as run at once
  int finish_grid_ = 0;  // the finish kernel's CTAs, likewise (persistent_finish)
};

/// The 128-byte CUtensorMap of a row-major [rows, cols] bf16/f16 matrix at `base`, read in boxes of
/// [box_rows, 64] with 128-byte swizzle; out-of-range elements read as zero.
CUtensorMap encode_operand_map(const runtime::Driver& driver, CUdeviceptr base, te::DType dtype,
                               std::int64_t rows, std::int64_t cols, int box_rows);

}  // namespace comfuse::codegen
