// End to end with a new operator: write it in the DSL, tune its fused kernel on the GPU (every candidate
// checked against the CPU reference and timed in an isolated worker), then run the winner on fresh inputs
// and check it again. Without a GPU it says so and stops after planning.
//
//   example_tune_silu_rmsnorm [M K N] [--log FILE] [--trials N]
#include <cstdlib>
#include <iostream>
#include <string>

#include "codegen/fused_kernel.h"
#include "codegen/reference_check.h"
#include "runtime/kernel_timer.h"
#include "search/gpu_runner.h"
#include "search/tuner.h"
#include "silu_rmsnorm_dsl.h"
#include "support/error.h"
#include "te/json.h"

int main(int argc, char** argv) {
  using namespace comfuse;
  std::int64_t shape[3] = {8192, 2048, 2048};
  std::string log_path;
  int trials = 24;
  for (int i = 1, positional = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--log" && i + 1 < argc) {
      log_path = argv[++i];
    } else if (arg == "--trials" && i + 1 < argc) {
      trials = std::atoi(argv[++i]);
    } else if (positional < 3) {
      shape[positional++] = std::atoll(arg.c_str());
    }
  }
  const auto [M, K, N] = shape;
  const te::Program program = examples::silu_rmsnorm_program(M, K, N);
  std::cout << "operator silu_rmsnorm M=" << M << " K=" << K << " N=" << N << ", key "
            << te::workload_key(program) << "\n"
            << schedule::to_string(schedule::plan_fusion(program));

  // 1. Tune. The measurer forks its workers before this process touches CUDA.
  const search::GpuWorkload workload = search::prepare_workload(program, 42);
  const auto measurer = search::make_gpu_measurer(workload);
  try {
    measurer->target();
  } catch (const RuntimeError& error) {
    std::cout << "no GPU here (" << error.what() << "): nothing to tune\n";
    return 3;
  }
  search::TuneOptions options;
  options.trials = trials;
  options.log_path = log_path;
  const search::TuneResult tuned = search::tune(program, *measurer, options);
  const std::optional<double> gemm = measurer->gemm_alone_us(50);
  std::cout << "tuned: " << tuned.measured << " candidates measured of " << tuned.space
            << " legal schedules in " << tuned.seconds << " s\nwinner "
            << schedule::to_string(tuned.winner.schedule) << ": " << *tuned.winner.median_us << " us";
  if (gemm)
    std::cout << " (cuBLAS GEMM alone " << *gemm << " us, ratio " << *tuned.winner.median_us / *gemm << ")";
  std::cout << "\n";

  // 2. Run the winner here, on inputs it has never seen, outputs poisoned first.
  const codegen::KernelSource source =
      codegen::emit_kernel(workload.plan, tuned.winner.schedule, workload.key);
  runtime::Context context(0);
  codegen::FusedKernel kernel(context, program, source);
  std::vector<te::HostBuffer> inputs;
  std::vector<const void*> data;
  for (std::size_t i = 0; i < program.inputs().size(); ++i) {
    const te::Tensor& t = program.inputs()[i];
    inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), 9000 + i));
    data.push_back(inputs.back().data());
  }
  codegen::DeviceBindings bindings = kernel.bind(data);
  bindings.outputs[0].fill_bytes(0xFF);
  kernel.launch(bindings);
  context.synchronize();
  const codegen::ReferenceCheck check =
      codegen::check_against_reference(program, inputs, codegen::download_outputs(program, bindings));
  std::cout << "fresh inputs: " << (check.ok ? "matches" : "DIFFERS FROM")
            << " the CPU reference (max rel err " << check.max_rel_error << ")\n";
  return check.ok ? 0 : 1;
}
