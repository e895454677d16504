// Compiling, loading, binding and launching generated kernels.
#include "codegen/fused_kernel.h"

#include <algorithm>

#include "support/error.h"
#include "te/printer.h"

namespace comfuse::codegen {

CUtensorMap encode_operand_map(const runtime::Driver& driver, CUdeviceptr base, te::DType dtype,
                               std::int64_t rows, std::int64_t cols, int box_rows) {
  COMFUSE_CHECK(dtype == te::DType::bf16 || dtype == te::DType::f16, "TMA operand must be bf16 or f16");
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult result = driver.api().tensor_map_encode_tiled(
      &map, dtype == te::DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
      /*tensorRank=*/2, reinterpret_cast<void*>(base), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  driver.check(result, "cuTensorMapEncodeTiled");
  return map;
}

namespace {

std::size_t tensor_bytes(const te::Tensor& t) {
  std::int64_t count = 1;
  for (std::int64_t extent : t.shape()) count *= extent;
  return static_cast<std::size_t>(count) * te::dtype_bytes(t.dtype());
}

std::size_t position_of(const std::vector<te::Tensor>& tensors, const te::Tensor& t) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].same_as(t)) return i;
  }
  throw InternalError("kernel parameter '" + t.name() + "' is not part of the bound program");
}

}  // namespace

std::vector<te::HostBuffer> download_outputs(const te::Program& program, const DeviceBindings& bindings) {
  COMFUSE_CHECK(bindings.outputs.size() == program.outputs().size(), "one bound buffer per program output");
  std::vector<te::HostBuffer> outputs;
  for (std::size_t o = 0; o < program.outputs().size(); ++o) {
    const te::Tensor& t = program.outputs()[o];
    outputs.emplace_back(t.dtype(), t.shape());
    COMFUSE_CHECK(bindings.outputs[o].size() == outputs.back().size_bytes(),
                  "output '" + t.name() + "' is bound whole");
    bindings.outputs[o].copy_to_host(outputs.back().data(), outputs.back().size_bytes());
  }
  return outputs;
}

runtime::CompiledProgram compile_kernel_source(const KernelSource& source) {
  runtime::CompileOptions options;
  options.program_name = source.name + ".cu";
  return runtime::compile(source.source, options);
}

FusedKernel::FusedKernel(const runtime::Context& context, te::Program program, KernelSource source)
    : FusedKernel(context, std::move(program), source, compile_kernel_source(source)) {}

FusedKernel::FusedKernel(const runtime::Context& context, te::Program program, KernelSource source,
                         runtime::CompiledProgram compiled)
    : context_(context),
      program_(std::move(program)),
      source_(std::move(source)),
      compiled_(std::move(compiled)) {
  module_ = std::make_unique<runtime::Module>(context_, compiled_.image);
  function_ = std::make_unique<runtime::Function>(module_->function(source_.name));
  if (!source_.finish_name.empty())
    finish_ = std::make_unique<runtime::Function>(module_->function(source_.finish_name));
  finish_grid_ = source_.launch.finish_grid_x;
  if (finish_ && source_.launch.persistent_finish) {
    // As many finish CTAs as the device runs at once (their registers decide how many an SM holds).
    runtime::LaunchConfig config;
    config.block = {static_cast<unsigned>(source_.launch.finish_block_x), 1, 1};
    const int fit = runtime::max_active_blocks_per_multiprocessor(*finish_, config) *
                    context_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    finish_grid_ = std::max(1, std::min(finish_grid_, fit));
  }
  grid_ = source_.launch.grid_x;
  if (source_.launch.persistent && source_.launch.cluster_x > 1) {
    // Persistent clusters: as many as the device runs at once (the GPCs decide, not the SM count alone).
    runtime::LaunchConfig config;
    config.block = {static_cast<unsigned>(source_.launch.block_x), 1, 1};
    config.cluster = {static_cast<unsigned>(source_.launch.cluster_x), 1, 1};
    config.dynamic_shared_bytes = static_cast<unsigned>(source_.launch.shared_bytes);
    const int clusters = std::max(1, runtime::max_active_clusters(*function_, config));
    grid_ = std::min(grid_ / source_.launch.cluster_x, clusters) * source_.launch.cluster_x;
  } else if (source_.launch.persistent) {
    // Whole groups (global_exchange), as many CTAs as the device runs at once.
    const int group = source_.launch.group_x;
    const int fit =
        source_.launch.ctas_per_multiprocessor * context_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    grid_ = std::max(1, std::min(grid_, fit) / group) * group;
  }
}

DeviceBindings FusedKernel::bind(const std::vector<const void*>& input_data) const {
  return bind_buffers(program_, input_data);
}

DeviceBindings FusedKernel::bind_buffers(const te::Program& program,
                                         const std::vector<const void*>& input_data) const {
  COMFUSE_CHECK(input_data.size() == program.inputs().size(), "one host pointer per program input");
  DeviceBindings bindings;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const std::size_t bytes = tensor_bytes(program.inputs()[i]);
    bindings.inputs.emplace_back(context_, bytes);
    if (input_data[i] != nullptr) bindings.inputs.back().copy_from_host(input_data[i], bytes);
  }
  for (const te::Tensor& t : program.outputs()) bindings.outputs.emplace_back(context_, tensor_bytes(t));
  if (source_.stash_bytes > 0) {
    bindings.stash =
        std::make_unique<runtime::DeviceBuffer>(context_, static_cast<std::size_t>(source_.stash_bytes));
    if (source_.zeroed_workspace) bindings.stash->fill_bytes(0);
  }
  if (source_.trace_capacity > 0) {
    const PhaseTrace trace(true, source_.trace_capacity);
    bindings.trace = std::make_unique<runtime::DeviceBuffer>(
        context_, static_cast<std::size_t>(trace.buffer_bytes(grid_, source_.launch.block_x / 128)));
    bindings.trace->fill_bytes(0);
  }
  return bindings;
}

DeviceBindings FusedKernel::bind_whole(const te::Program& whole, const std::vector<const void*>& input_data,
                                       int* slices) const {
  // Every output is row-major in M: the count of slices is the whole program's rows over the kernel's.
  const std::int64_t rows = program_.outputs().front().shape().front();
  const std::int64_t whole_rows = whole.outputs().front().shape().front();
  *slices = static_cast<int>(whole_rows / rows);
  const auto cut = [&](const std::vector<te::Tensor>& theirs, const std::vector<te::Tensor>& ours,
                       const std::string& what) {
    if (theirs.size() != ours.size()) {
      throw CompileError("row slices: the whole program has " + std::to_string(theirs.size()) + " " + what +
                         "s, the kernel's " + std::to_string(ours.size()));
    }
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const std::vector<std::int64_t>& big = theirs[i].shape();
      const std::vector<std::int64_t>& small = ours[i].shape();
      const bool same_columns = big.size() == small.size() && !big.empty() &&
                                std::equal(big.begin() + 1, big.end(), small.begin() + 1);
      const bool sliced = small[0] == rows && big[0] == rows * *slices;
      if (!same_columns || (big[0] != small[0] && !sliced) || theirs[i].dtype() != ours[i].dtype() ||
          theirs[i].name() != ours[i].name()) {
        throw CompileError("row slices: " + what + " '" + theirs[i].name() + "' of the whole program (" +
                           std::string(te::dtype_name(theirs[i].dtype())) + " " + te::shape_to_string(big) +
                           ") is not a row slice of the kernel's '" + ours[i].name() + "' (" +
                           std::string(te::dtype_name(ours[i].dtype())) + " " + te::shape_to_string(small) +
                           ") in the same count of slices as the tensors before it");
      }
    }
  };
  cut(whole.inputs(), program_.inputs(), "input");
  cut(whole.outputs(), program_.outputs(), "output");
  return bind_buffers(whole, input_data);
}

void FusedKernel::clear_trace(const DeviceBindings& bindings) const {
  COMFUSE_CHECK(bindings.trace != nullptr, "kernel '" + source_.name + "' was emitted with a phase trace");
  bindings.trace->fill_bytes(0);
}

std::vector<TraceSlot> FusedKernel::read_trace(const DeviceBindings& bindings) const {
  COMFUSE_CHECK(bindings.trace != nullptr, "kernel '" + source_.name + "' was emitted with a phase trace");
  const std::vector<std::uint64_t> words =
      bindings.trace->download<std::uint64_t>(bindings.trace->size() / sizeof(std::uint64_t));
  return decode_trace(words, grid_, source_.launch.block_x / 128, source_.trace_capacity);
}

// The TMA map of `tensor` at `base`, read or written through its 2-D view [leading axes x rows, columns].
CUtensorMap FusedKernel::tensor_map(CUdeviceptr base, const te::Tensor& tensor, int box_rows) const {
  const std::int64_t cols = tensor.shape().back();
  const std::int64_t rows =
      static_cast<std::int64_t>(tensor_bytes(tensor)) / (cols * te::dtype_bytes(tensor.dtype()));
  return encode_operand_map(context_.driver(), base, tensor.dtype(), rows, cols, box_rows);
}

void FusedKernel::launch(const DeviceBindings& bindings, CUstream stream) const {
  launch_slice(bindings, 0, stream);
}

void FusedKernel::launch_slice(const DeviceBindings& bindings, int slice, CUstream stream) const {
  // A buffer holding more than its tensor holds the tensor's row slices one after another (bind_whole).
  const auto at_slice = [slice](const runtime::DeviceBuffer& buffer, const te::Tensor& tensor) {
    const std::size_t bytes = tensor_bytes(tensor);
    if (buffer.size() == bytes) return buffer.get();
    COMFUSE_CHECK(buffer.size() % bytes == 0 && slice >= 0 &&
                      static_cast<std::size_t>(slice + 1) * bytes <= buffer.size(),
                  "row slice " + std::to_string(slice) + " of '" + tensor.name() + "' lies in its buffer");
    return buffer.get() + static_cast<CUdeviceptr>(slice) * bytes;
  };
  const auto& params = source_.params;
  // Arguments must outlive the launch call: reserve so that pointers into the vectors stay valid.
  std::vector<CUtensorMap> maps;
  maps.reserve(params.size());
  std::vector<CUdeviceptr> pointers;
  pointers.reserve(params.size());
  std::vector<void*> args;
  const int bm = source_.schedule.bm;
  const int bn = source_.schedule.bn;
  for (const KernelParam& p : params) {
    switch (p.kind) {
      case KernelParam::Kind::kTmaA:
      case KernelParam::Kind::kTmaB: {
        const auto& buffer = bindings.inputs.at(position_of(program_.inputs(), p.tensor));
        const bool is_a = p.kind == KernelParam::Kind::kTmaA;
        maps.push_back(
            tensor_map(at_slice(buffer, p.tensor), p.tensor, p.box_rows > 0 ? p.box_rows : (is_a ? bm : bn)));
        args.push_back(&maps.back());
        break;
      }
      case KernelParam::Kind::kTmaOut: {
        const auto& buffer = bindings.outputs.at(position_of(program_.outputs(), p.tensor));
        maps.push_back(tensor_map(at_slice(buffer, p.tensor), p.tensor, p.box_rows));
        args.push_back(&maps.back());
        break;
      }
      case KernelParam::Kind::kTmaIn: {
        const auto& buffer = bindings.inputs.at(position_of(program_.inputs(), p.tensor));
        maps.push_back(tensor_map(at_slice(buffer, p.tensor), p.tensor, p.box_rows));
        args.push_back(&maps.back());
        break;
      }
      case KernelParam::Kind::kTmaStash: {
        COMFUSE_CHECK(bindings.stash != nullptr, "a TMA-stored stash has its buffer");
        const auto& shape = p.tensor.shape();
        maps.push_back(encode_operand_map(context_.driver(), bindings.stash->get(), te::DType::bf16, shape[0],
                                          shape[1], p.box_rows));
        args.push_back(&maps.back());
        break;
      }
      case KernelParam::Kind::kInput:
        pointers.push_back(at_slice(bindings.inputs.at(position_of(program_.inputs(), p.tensor)), p.tensor));
        args.push_back(&pointers.back());
        break;
      case KernelParam::Kind::kOutput:
        pointers.push_back(
            at_slice(bindings.outputs.at(position_of(program_.outputs(), p.tensor)), p.tensor));
        args.push_back(&pointers.back());
        break;
      case KernelParam::Kind::kStash:
        pointers.push_back(bindings.stash ? bindings.stash->get() : CUdeviceptr{0});
        args.push_back(&pointers.back());
        break;
      case KernelParam::Kind::kTrace:
        COMFUSE_CHECK(bindings.trace != nullptr, "a traced kernel's bindings have its trace buffer");
        pointers.push_back(bindings.trace->get());
        args.push_back(&pointers.back());
        break;
    }
  }
  runtime::LaunchConfig config;
  config.grid = {static_cast<unsigned>(grid_), 1, 1};
  config.block = {static_cast<unsigned>(source_.launch.block_x), 1, 1};
  config.cluster = {static_cast<unsigned>(source_.launch.cluster_x), 1, 1};
  config.dynamic_shared_bytes = static_cast<unsigned>(source_.launch.shared_bytes);
  config.stream = stream;
  config.cooperative = source_.launch.cooperative;
  runtime::launch(*function_, config, args.data());
  if (finish_) {  // same arguments; the stream orders it after the main kernel
    runtime::LaunchConfig finish;
    finish.grid = {static_cast<unsigned>(finish_grid_), 1, 1};
    finish.block = {static_cast<unsigned>(source_.launch.finish_block_x), 1, 1};
    finish.stream = stream;
    runtime::launch(*finish_, finish, args.data());
  }
}

}  // namespace comfuse::codegen
