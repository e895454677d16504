// The GPU side of a tuning worker: check against the reference, then CUPTI timing.
#include "search/gpu_runner.h"

#include "codegen/b2b_emitter.h"
#include "codegen/fused_kernel.h"
#include "runtime/context.h"
#include "runtime/cublas_gemm.h"
#include "runtime/fingerprint.h"
#include "runtime/kernel_timer.h"
#include "support/error.h"
#include "te/json.h"

namespace comfuse::search {

struct GpuRunner::State {
  explicit State(int ordinal) : context(ordinal), stream(context), timer(context, stream) {}
  runtime::Context context;
  runtime::Stream stream;
  runtime::KernelTimer timer;
  std::unique_ptr<runtime::CublasGemm> cublas;
};

namespace {

// A tuning workload's inputs: random, input i from `seed + 7919 i`.
std::vector<te::HostBuffer> random_inputs(const te::Program& program, std::uint64_t seed) {
  std::vector<te::HostBuffer> inputs;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const te::Tensor& t = program.inputs()[i];
    inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), seed + 7919 * i));
  }
  return inputs;
}

}  // namespace

GpuWorkload prepare_workload(const te::Program& program, std::uint64_t seed) {
  GpuWorkload workload{
      schedule::plan_fusion(program), te::workload_key(program), random_inputs(program, seed), {}};
  workload.reference = codegen::compute_reference(program, workload.inputs);
  return workload;
}

GpuRunner::GpuRunner(const GpuWorkload& workload, int ordinal)
    : workload_(workload), state_(std::make_unique<State>(ordinal)) {}

GpuRunner::~GpuRunner() = default;

runtime::DeviceFingerprint GpuRunner::target() {
  return runtime::read_fingerprint(state_->context.ordinal());
}

namespace {

// Loads `image` (the cubin of `source`), checks its outputs against the reference, then times it.
Measurement check_and_time(GpuRunner::State& state, const te::Program& program,
                           const codegen::KernelSource& source, const std::string& image,
                           const std::vector<te::HostBuffer>& inputs, const codegen::ReferenceRows& reference,
                           double tolerance, int repeats, bool* unusable) {
  Measurement m;
  runtime::CompiledProgram compiled;
  compiled.output = runtime::OutputKind::cubin;
  compiled.image = image;
  compiled.arch = "sm_90a";
  try {
    codegen::FusedKernel kernel(state.context, program, source, compiled);
    std::vector<const void*> data;
    for (const te::HostBuffer& b : inputs) data.push_back(b.data());
    codegen::DeviceBindings bindings = kernel.bind(data);
    for (auto& out : bindings.outputs) out.fill_bytes(0xFF);  // NaN in every float format
    kernel.launch(bindings, state.stream.get());
    state.stream.synchronize();
    const std::vector<te::HostBuffer> outputs = codegen::download_outputs(program, bindings);
    const codegen::ReferenceCheck check = codegen::check_outputs(reference, outputs, tolerance);
    m.max_rel_error = check.max_rel_error;
    if (!check.ok) {
      m.status = RecordStatus::kWrongAnswer;
      m.error = "output differs from the reference: " + check.detail.substr(0, check.detail.find('\n', 400));
      return m;
    }
    runtime::TimingOptions timing;
    timing.warmup = 5;
    timing.repeats = repeats;
    m.times_us = state.timer.measure([&](CUstream s) { kernel.launch(bindings, s); }, timing).samples_us;
  } catch (const RuntimeError& error) {
    m.status = RecordStatus::kLaunchError;
    m.error = error.what();
    m.times_us.clear();
    *unusable = true;
  }
  return m;
}

}  // namespace

Measurement GpuRunner::run(const schedule::Schedule& schedule, const std::string& image, int repeats,
                           bool* unusable) {
  const codegen::KernelSource source = codegen::emit_kernel(workload_.plan, schedule, workload_.key);
  return check_and_time(*state_, workload_.plan.program, source, image, workload_.inputs, workload_.reference,
                        workload_.tolerance, repeats, unusable);
}

std::optional<double> GpuRunner::gemm_alone_us(int repeats) {
  const auto& anchor = workload_.plan.anchor;
  const te::Program& program = workload_.plan.program;
  auto upload = [&](const te::Tensor& t) {
    for (std::size_t i = 0; i < program.inputs().size(); ++i) {
      if (!program.inputs()[i].same_as(t)) continue;
      runtime::DeviceBuffer buffer(state_->context, workload_.inputs[i].size_bytes());
      buffer.copy_from_host(workload_.inputs[i].data(), workload_.inputs[i].size_bytes());
      return buffer;
    }
    throw InternalError("the anchor's operand '" + t.name() + "' is not a program input");
  };
  if (anchor.a.dtype() != te::DType::bf16 || anchor.b.dtype() != te::DType::bf16 || !anchor.b_k_major) {
    return std::nullopt;  // the baseline GEMM is the bf16 X·Wᵀ of the suite
  }
  const runtime::DeviceBuffer x = upload(anchor.a), w = upload(anchor.b);
  runtime::DeviceBuffer y(state_->context, static_cast<std::size_t>(anchor.m * anchor.n * 2));
  if (!state_->cublas) state_->cublas = std::make_unique<runtime::CublasGemm>();
  runtime::TimingOptions timing;
  timing.repeats = repeats;
  return state_->timer
      .measure(
          [&](CUstream s) {
            state_->cublas->run(x.get(), w.get(), y.get(), anchor.m, anchor.n, anchor.k, s);
          },
          timing)
      .median_us;
}

std::unique_ptr<IsolatedMeasurer> make_gpu_measurer(const GpuWorkload& workload, int ordinal,
                                                    IsolationOptions options) {
  return std::make_unique<IsolatedMeasurer>(
      [&workload, ordinal] { return std::make_unique<GpuRunner>(workload, ordinal); }, options);
}

B2BGpuWorkload prepare_b2b_workload(const te::Program& program, std::uint64_t seed) {
  B2BGpuWorkload workload{
      schedule::plan_b2b(program), te::workload_key(program), random_inputs(program, seed), {}};
  // Independent rows: a batch of a batched program (every operand is batch-major), else a row of X.
  const bool batched = !workload.plan.first.batch.empty();
  // A batch of attention is a whole problem: compare three of them; MLP rows in blocks of 64 as usual.
  workload.reference =
      codegen::compute_reference(program, workload.inputs, batched ? 1 : 512, batched ? 1 : 64);
  return workload;
}

B2BGpuRunner::B2BGpuRunner(const B2BGpuWorkload& workload, int ordinal)
    : workload_(workload), state_(std::make_unique<GpuRunner::State>(ordinal)) {}

B2BGpuRunner::~B2BGpuRunner() = default;

runtime::DeviceFingerprint B2BGpuRunner::target() {
  return runtime::read_fingerprint(state_->context.ordinal());
}

Measurement B2BGpuRunner::run(const schedule::Schedule&, const std::string&, int, bool*) {
  Measurement m;
  m.status = RecordStatus::kLaunchError;
  m.error = "a back-to-back workload is measured as the fused back-to-back kernel, not a fused-GEMM schedule";
  return m;
}

Measurement B2BGpuRunner::run_b2b(const schedule::B2BSchedule& schedule, const std::string& image,
                                  int repeats, bool* unusable) {
  const codegen::KernelSource source = codegen::emit_b2b_kernel(workload_.plan, schedule, workload_.key);
  return check_and_time(*state_, workload_.plan.program, source, image, workload_.inputs, workload_.reference,
                        workload_.tolerance, repeats, unusable);
}

std::unique_ptr<IsolatedMeasurer> make_b2b_gpu_measurer(const B2BGpuWorkload& workload, int ordinal,
                                                        IsolationOptions options) {
  return std::make_unique<IsolatedMeasurer>(
      [&workload, ordinal] { return std::make_unique<B2BGpuRunner>(workload, ordinal); }, options);
}

}  // namespace comfuse::search
