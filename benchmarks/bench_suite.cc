// Times comfuse's kernels for every suite row and cuBLAS GEMM alone on the same shapes, in one process with
// CUPTI; checks every kernel against the CPU reference first. Writes a JSON file and prints a table.
//
//   bench_suite OUT.json [--repeats N] [--only WORKLOAD,...] [--variant ping_pong] [--log TUNING_LOG]
//               [--b2b-fused] [--clock cupti|events] [--allow-target-mismatch]
//
// With --log, each kernel is replayed from the tuning log (the winner for its workload key and this GPU);
// kernels without a record there use the default schedule, and the JSON says which ("schedule_source").
// --allow-target-mismatch replays records measured on another GPU or software stack too (the log of one
// card timed or profiled on another; the JSON says so: "allow_target_mismatch").
// Back-to-back programs (MLPs) that the fused kernel does not cover yet run as two kernels, GEMM1 with the
// tiles between and GEMM2 with its epilogue; each is checked against the reference of its part, GEMM2's with
// GEMM1's GPU output as its input. --variant ping_pong runs reduction plans with ping-pong consumer
// warpgroups where legal (benchmarks/NOTES.md's ping-pong entry). --b2b-fused also runs the fused
// back-to-back kernel of the two-kernel rows, checks it on the first rows against the reference and reports
// both times ("unfused_us", "b2b_fused_us"); "ours_us" is the faster correct one, and "plan" says which. Rows
// without a two-kernel plan (attention) run the fused kernel alone. --clock events times with CUDA events
// around each run instead of CUPTI (launch latency included), for runs under a profiler, which holds CUPTI.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "codegen/fused_kernel.h"
#include "codegen/reference_check.h"
#include "runtime/cublas_gemm.h"
#include "runtime/kernel_timer.h"
#include "search/gpu_runner.h"
#include "search/tuning_log.h"
#include "suite_row.h"
#include "support/error.h"
#include "te/json.h"

namespace comfuse::bench {
namespace {

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", std::gmtime(&now));
  return buffer;
}

struct Measured {
  runtime::Timing ours;
  std::optional<runtime::Timing> gemm;  // cuBLAS GEMM alone; single-kernel rows only
  codegen::ReferenceCheck check;
};

// Runs a row's kernels on fresh inputs (outputs poisoned), checks each part, then times them back to back.
Measured measure_row(Row& row, std::uint64_t seed, const runtime::Context& context,
                     const runtime::Stream& stream, runtime::KernelTimer& timer,
                     const runtime::CublasGemm& cublas, const runtime::TimingOptions& timing) {
  std::map<std::string, te::HostBuffer> host;  // by tensor name: inputs, then each part's outputs
  const te::Program whole = te::build_workload(row.entry.workload, row.entry.shape);
  for (std::size_t i = 0; i < whole.inputs().size(); ++i) {
    const te::Tensor& t = whole.inputs()[i];
    host.emplace(t.name(), te::HostBuffer::random(t.dtype(), t.shape(), seed + i));
  }
  std::vector<std::unique_ptr<codegen::FusedKernel>> kernels;
  std::vector<codegen::DeviceBindings> bindings;
  Measured measured;
  measured.check.ok = true;
  for (Part& part : row.parts) {
    std::vector<te::HostBuffer> inputs;
    std::vector<const void*> data;
    for (const te::Tensor& t : part.program.inputs()) inputs.push_back(host.at(t.name()));
    for (const te::HostBuffer& b : inputs) data.push_back(b.data());
    kernels.push_back(
        std::make_unique<codegen::FusedKernel>(context, part.program, part.source, std::move(part.compiled)));
    bindings.push_back(kernels.back()->bind(data));
    for (auto& out : bindings.back().outputs) out.fill_bytes(0xFF);
    kernels.back()->launch(bindings.back(), stream.get());
    stream.synchronize();
    const std::vector<te::HostBuffer> gpu = codegen::download_outputs(part.program, bindings.back());
    for (std::size_t o = 0; o < gpu.size(); ++o)
      host.insert_or_assign(part.program.outputs()[o].name(), gpu[o]);
    const codegen::ReferenceCheck check = codegen::check_against_reference(part.program, inputs, gpu);
    measured.check.ok = measured.check.ok && check.ok;
    measured.check.max_rel_error = std::max(measured.check.max_rel_error, check.max_rel_error);
    measured.check.detail += check.detail;
  }
  measured.ours = timer.measure(
      [&](CUstream s) {
        for (std::size_t k = 0; k < kernels.size(); ++k) kernels[k]->launch(bindings[k], s);
      },
      timing);
  if (row.parts.size() == 1) {
    const Part& part = row.parts[0];
    const auto& anchor = part.plan.anchor;
    auto input_of = [&](const te::Tensor& t) -> const runtime::DeviceBuffer& {
      for (std::size_t i = 0; i < part.program.inputs().size(); ++i) {
        if (part.program.inputs()[i].same_as(t)) return bindings[0].inputs[i];
      }
      throw InternalError("operand is not a program input");
    };
    runtime::DeviceBuffer gemm_out(context, static_cast<std::size_t>(anchor.m * anchor.n * 2));
    const CUdeviceptr x = input_of(anchor.a).get(), w = input_of(anchor.b).get();
    measured.gemm = timer.measure(
        [&](CUstream s) { cublas.run(x, w, gemm_out.get(), anchor.m, anchor.n, anchor.k, s); }, timing);
  }
  return measured;
}

struct FusedMeasured {
  runtime::Timing timing;
  bool correct = false;
  double rel_error = 0;
};

// The fused back-to-back kernel of `row` on the b2b tuner's workload (random inputs from `seed`; the
// reference on the first, middle and last row blocks, a batch of attention each:
// search::prepare_b2b_workload), its outputs poisoned first and compared on those blocks.
FusedMeasured measure_fused_b2b(Row& row, std::uint64_t seed, const runtime::Context& context,
                                const runtime::Stream& stream, runtime::KernelTimer& timer,
                                const runtime::TimingOptions& timing) {
  const te::Program& whole = row.fused_b2b->program;
  const search::B2BGpuWorkload workload = search::prepare_b2b_workload(whole, seed);
  std::vector<const void*> data;
  for (const te::HostBuffer& b : workload.inputs) data.push_back(b.data());
  codegen::FusedKernel kernel(context, whole, row.fused_b2b->source, std::move(row.fused_b2b->compiled));
  codegen::DeviceBindings bindings = kernel.bind(data);
  for (runtime::DeviceBuffer& output : bindings.outputs) output.fill_bytes(0xFF);
  kernel.launch(bindings, stream.get());
  stream.synchronize();
  const codegen::ReferenceCheck check =
      codegen::check_outputs(workload.reference, codegen::download_outputs(whole, bindings));
  FusedMeasured measured;
  measured.correct = check.ok;
  measured.rel_error = check.max_rel_error;
  if (!check.ok) std::cerr << row.name << ": the fused back-to-back kernel is wrong:\n" << check.detail;
  measured.timing = timer.measure([&](CUstream s) { kernel.launch(bindings, s); }, timing);
  return measured;
}

// The fused back-to-back kernel's fields of a row's record: its time, error, correctness and schedule source.
void record_fused(nlohmann::json& record, const FusedMeasured& fused, const Row& row) {
  record["b2b_fused_us"] = fused.timing.median_us;
  record["b2b_fused_rel_err"] = fused.rel_error;
  record["b2b_fused_correct"] = fused.correct;
  record["b2b_fused_schedule_source"] = row.fused_b2b->from_log ? "tuning_log" : "default";
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) items.push_back(item);
  return items;
}

int run(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {  // the output file comes first, not a flag
    std::cerr << "usage: bench_suite OUT.json [--repeats N] [--only WORKLOAD,...] [--variant ping_pong] "
                 "[--log FILE] "
                 "[--b2b-fused] [--clock cupti|events] [--allow-target-mismatch]\n";
    return 2;
  }
  const std::string out_path = argv[1];
  int repeats = 50;
  std::string variant, log_path;
  std::vector<std::string> only;
  bool b2b_fused = false;
  search::ReplayOptions replay;
  runtime::TimingOptions timing;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--b2b-fused") {
      b2b_fused = true;
      continue;
    }
    if (flag == "--allow-target-mismatch") {
      replay.allow_target_mismatch = true;
      continue;
    }
    if (i + 1 >= argc) throw CompileError(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--repeats")
      repeats = std::stoi(value);
    else if (flag == "--only")
      only = split_list(value);
    else if (flag == "--variant")
      variant = value;
    else if (flag == "--log")
      log_path = value;
    else if (flag == "--clock" && (value == "cupti" || value == "events"))
      timing.clock =
          value == "events" ? runtime::TimingOptions::Clock::kEvents : runtime::TimingOptions::Clock::kCupti;
    else if (flag == "--clock")
      throw CompileError("--clock " + value + ": expected cupti or events");
    else
      throw CompileError("unknown flag " + flag);
  }
  const runtime::DeviceFingerprint fingerprint = runtime::read_fingerprint(0);
  std::vector<search::TuningRecord> tuned;
  if (!log_path.empty()) {
    search::LoadResult loaded = search::TuningLog::load(log_path);
    for (const std::string& problem : loaded.problems) std::cerr << "warning: " << problem << "\n";
    tuned = std::move(loaded.records);
  }
  std::vector<Row> rows;
  for (const SuiteEntry& entry : suite()) {
    if (!selected(entry, only)) continue;
    rows.push_back(prepare_row(entry, variant, tuned, fingerprint, b2b_fused, replay));
  }
  compile_rows(rows);

  runtime::Context context(0);
  runtime::Stream stream(context);
  runtime::KernelTimer timer(context, stream);
  runtime::CublasGemm cublas;
  timing.repeats = repeats;
  nlohmann::json workloads = nlohmann::json::array();
  std::printf("%-40s %10s %10s %9s %10s %8s %10s\n", "workload", "ours_us", "gemm_us", "ours/gemm",
              "residual", "TFLOP/s", "rel_err");
  for (std::size_t index = 0; index < rows.size(); ++index) {
    Row& row = rows[index];
    nlohmann::json record = {{"name", row.name}, {"workload", row.entry.workload}, {"flops", row.flops}};
    if (!row.entry.baseline.empty()) record["baseline_row"] = row.entry.baseline;
    const bool fused_only = row.fused_b2b && row.fused_b2b->unsupported.empty() &&
                            row.fused_b2b->compile_error.empty() && !row.unsupported.empty();
    if (fused_only) {  // no two-kernel plan (attention): the fused kernel alone
      const FusedMeasured fused = measure_fused_b2b(row, 1000 + 31 * index, context, stream, timer, timing);
      record["unfused_unsupported"] = row.unsupported;
      record_fused(record, fused, row);
      record["plan"] = "fused";
      record["ours_us"] = fused.correct ? nlohmann::json(fused.timing.median_us) : nlohmann::json();
      record["max_rel_err"] = fused.rel_error;
      record["correct"] = fused.correct;
      record["kernels"] = 1;
      if (fused.correct) record["tflops"] = static_cast<double>(row.flops) / (fused.timing.median_us * 1e6);
      std::printf("%-40s %10.1f  fused back-to-back kernel, rel err %.2e%s\n", row.name.c_str(),
                  fused.timing.median_us, fused.rel_error, fused.correct ? "" : "  WRONG");
      workloads.push_back(record);
      continue;
    }
    if (!row.unsupported.empty() || !row.compile_error.empty()) {
      record["ours_us"] = nullptr;
      record["unsupported"] =
          row.unsupported.empty() ? "compile error: " + row.compile_error : row.unsupported;
      std::printf("%-40s unsupported: %s\n", row.name.c_str(),
                  record["unsupported"].get<std::string>().substr(0, 90).c_str());
      workloads.push_back(record);
      continue;
    }
    const Measured m = measure_row(row, 1000 + 31 * index, context, stream, timer, cublas, timing);
    record["ours_us"] = m.ours.median_us;
    record["ours_cv"] = m.ours.cv;
    // Each kernel of a run on its own (a deferred reduction: its main kernel, then its finish kernel).
    if (!m.ours.kernel_median_us.empty()) record["ours_kernel_us"] = m.ours.kernel_median_us;
    record["tflops"] = static_cast<double>(row.flops) / (m.ours.median_us * 1e6);
    record["max_rel_err"] = m.check.max_rel_error;
    record["correct"] = m.check.ok;
    record["kernels"] = row.parts.size();
    record["schedule"] = schedule::to_json(row.parts[0].source.schedule);
    if (row.parts.size() == 2) record["schedule_second"] = schedule::to_json(row.parts[1].source.schedule);
    record["schedule_source"] = row.schedule_source;
    record["tune_seconds"] = row.tune_seconds ? nlohmann::json(*row.tune_seconds) : nlohmann::json();
    const double gemm_us = m.gemm ? m.gemm->median_us : 0;
    if (m.gemm) {
      record["cublas_gemm_us"] = gemm_us;
      record["cublas_gemm_cv"] = m.gemm->cv;
      record["ours_over_gemm"] = m.ours.median_us / gemm_us;
      record["residual_us"] = m.ours.median_us - gemm_us;
    } else {
      record["cublas_gemm_us"] = nullptr;
    }
    if (row.fused_b2b) {
      record["unfused_us"] = m.ours.median_us;
      record["plan"] = "unfused";
      if (!row.fused_b2b->unsupported.empty() || !row.fused_b2b->compile_error.empty()) {
        record["b2b_fused_unsupported"] = row.fused_b2b->unsupported.empty()
                                              ? "compile error: " + row.fused_b2b->compile_error
                                              : row.fused_b2b->unsupported;
      } else {
        const FusedMeasured fused = measure_fused_b2b(row, 1000 + 31 * index, context, stream, timer, timing);
        record_fused(record, fused, row);
        std::printf("%-40s fused back-to-back kernel: %.1f us, rel err %.2e%s\n", row.name.c_str(),
                    fused.timing.median_us, fused.rel_error, fused.correct ? "" : "  WRONG");
        if (fused.correct && fused.timing.median_us < m.ours.median_us) {
          record["ours_us"] = fused.timing.median_us;
          record["tflops"] = static_cast<double>(row.flops) / (fused.timing.median_us * 1e6);
          record["plan"] = "fused";
        }
      }
    }
    std::string kernels;  // the kernels' own times when a run launches several
    if (m.ours.kernel_median_us.size() > 1) {
      for (std::size_t k = 0; k < m.ours.kernel_median_us.size(); ++k) {
        char part[32];
        std::snprintf(part, sizeof part, "%s%.1f", k == 0 ? "  kernels " : " + ", m.ours.kernel_median_us[k]);
        kernels += part;
      }
    }
    std::printf("%-40s %10.1f %10s %9s %10s %8.1f %10.2e%s%s%s\n", row.name.c_str(), m.ours.median_us,
                m.gemm ? std::to_string(gemm_us).substr(0, 8).c_str() : "-",
                m.gemm ? std::to_string(m.ours.median_us / gemm_us).substr(0, 5).c_str() : "-",
                m.gemm ? std::to_string(m.ours.median_us - gemm_us).substr(0, 7).c_str() : "-",
                record["tflops"].get<double>(), m.check.max_rel_error, m.check.ok ? "" : "  WRONG",
                row.parts.size() == 2 ? "  (2 kernels)" : "", kernels.c_str());
    std::fflush(stdout);
    workloads.push_back(record);
  }
  nlohmann::json result = {{"device", fingerprint.name},
                           {"fingerprint", runtime::fingerprint_to_json(fingerprint)},
                           {"date", today()},
                           {"variant", variant.empty() ? "default" : variant},
                           {"allow_target_mismatch", replay.allow_target_mismatch},
                           {"timing", std::string(timing.clock == runtime::TimingOptions::Clock::kEvents
                                                      ? "CUDA event intervals around each run"
                                                      : "CUPTI kernel durations") +
                                          ", median of " + std::to_string(repeats) +
                                          " runs, L2 flushed before each, 10 warm-up runs"},
                           {"workloads", workloads}};
  std::ofstream(out_path) << result.dump(1) << "\n";
  return 0;
}

}  // namespace
}  // namespace comfuse::bench

int main(int argc, char** argv) {
  try {
    return comfuse::bench::run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "bench_suite: " << error.what() << "\n";
    return 1;
  }
}
