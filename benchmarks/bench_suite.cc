// Times comfuse's fused kernel for every suite row and cuBLAS GEMM alone on the same shapes, in one process
// with CUPTI; checks every fused kernel against the CPU reference first. Writes a JSON file and prints a
// table.
//
//   bench_suite OUT.json [--repeats N] [--only WORKLOAD] [--variant ping_pong] [--log TUNING_LOG]
//
// With --log, each row's kernel is replayed from the tuning log (the winner for its workload key and this
// GPU); rows without a record there use the default schedule, and the JSON says which ("schedule_source").
// --variant ping_pong runs reduction plans with two ping-pong consumer warpgroups (BM=64) in place of the default
// warp roles, where that is legal: the experiment behind benchmarks/NOTES.md's ping-pong entry.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <fstream>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "codegen/fused_kernel.h"
#include "codegen/reference_check.h"
#include "runtime/cublas_gemm.h"
#include "runtime/fingerprint.h"
#include "runtime/kernel_timer.h"
#include "search/replay.h"
#include "search/tuning_log.h"
#include "te/json.h"
#include "suite.h"
#include "te/interpreter.h"

namespace comfuse::bench {
namespace {

struct Row {
  SuiteEntry entry;
  std::string name;
  std::int64_t flops = 0;
  std::string unsupported;  // why comfuse cannot fuse it yet, or empty
  std::optional<te::Program> program;
  std::optional<schedule::FusionPlan> plan;
  codegen::KernelSource source;
  runtime::CompiledProgram compiled;
  std::string compile_error;
  std::string schedule_source = "default";
  std::optional<double> tune_seconds;  // from the log's timestamps: first to last record of the key
};

std::int64_t seconds_of(const std::string& timestamp) {
  std::tm tm{};
  strptime(timestamp.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return static_cast<std::int64_t>(timegm(&tm));
}

// The span of the log's records for `key`, in seconds (timestamps have one-second resolution).
std::optional<double> tuning_span(const std::vector<search::TuningRecord>& records, const std::string& key) {
  std::optional<std::int64_t> first, last;
  for (const search::TuningRecord& r : records) {
    if (r.workload.key != key) continue;
    const std::int64_t t = seconds_of(r.timestamp);
    if (!first || t < *first) first = t;
    if (!last || t > *last) last = t;
  }
  if (!first) return std::nullopt;
  return static_cast<double>(*last - *first + 1);
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", std::gmtime(&now));
  return buffer;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_suite OUT.json [--repeats N] [--only WORKLOAD] [--variant ping_pong] [--log FILE]\n";
    return 2;
  }
  const std::string out_path = argv[1];
  int repeats = 50;
  std::string only, variant, log_path;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--repeats") repeats = std::stoi(argv[i + 1]);
    if (flag == "--only") only = argv[i + 1];
    if (flag == "--variant") variant = argv[i + 1];
    if (flag == "--log") log_path = argv[i + 1];
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
    if (!only.empty() && entry.workload != only) continue;
    Row row;
    row.entry = entry;
    const te::WorkloadInfo& info = te::workload_info(entry.workload);
    row.name = te::instance_name(info, entry.shape);
    row.program = te::build_workload(entry.workload, entry.shape);
    try {
      row.plan = schedule::plan_fusion(*row.program);
      row.flops = 2 * row.plan->anchor.m * row.plan->anchor.n * row.plan->anchor.k;
      schedule::Schedule s = schedule::default_schedule(*row.plan);
      if (variant == "ping_pong" && row.plan->has_reductions()) {
        schedule::Schedule ping_pong = s;
        ping_pong.bm = 64;
        ping_pong.warp_roles = schedule::WarpRoles::kPingPong;
        try {
          schedule::check_legal(*row.plan, ping_pong);
          s = ping_pong;
        } catch (const CompileError&) {
          // Not legal for this plan (e.g. registers with two tiles per warpgroup): keep the default.
        }
      }
      const std::string key = te::workload_key(*row.program);
      row.source = codegen::emit_kernel(*row.plan, s, key);
      if (!tuned.empty() && variant.empty()) {
        try {
          row.source = search::replay(tuned, *row.program, fingerprint).kernel;
          row.schedule_source = "tuning_log";
          row.tune_seconds = tuning_span(tuned, key);
        } catch (const CompileError& error) {
          std::cerr << row.name << ": default schedule (" << error.what() << ")\n";
        }
      }
    } catch (const CompileError& error) {
      row.unsupported = error.what();
    }
    rows.push_back(std::move(row));
  }
  {  // NVRTC on every core.
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> workers;
    for (unsigned w = 0; w < std::max(2u, std::thread::hardware_concurrency()); ++w) {
      workers.emplace_back([&] {
        for (std::size_t i = next++; i < rows.size(); i = next++) {
          if (!rows[i].unsupported.empty()) continue;
          try {
            runtime::CompileOptions options;
            options.program_name = rows[i].source.name + ".cu";
            rows[i].compiled = runtime::compile(rows[i].source.source, options);
          } catch (const std::exception& error) {
            rows[i].compile_error = error.what();
          }
        }
      });
    }
    for (auto& t : workers) t.join();
  }

  runtime::Context context(0);
  runtime::Stream stream(context);
  runtime::KernelTimer timer(context, stream);
  runtime::CublasGemm cublas;
  runtime::TimingOptions timing;
  timing.repeats = repeats;
  nlohmann::json workloads = nlohmann::json::array();
  std::printf("%-40s %10s %10s %9s %10s %8s %10s\n", "workload", "ours_us", "gemm_us", "ours/gemm",
              "residual", "TFLOP/s", "rel_err");
  for (std::size_t index = 0; index < rows.size(); ++index) {
    Row& row = rows[index];
    nlohmann::json record = {{"name", row.name}, {"workload", row.entry.workload}, {"flops", row.flops}};
    if (!row.entry.baseline.empty()) record["baseline_row"] = row.entry.baseline;
    if (!row.unsupported.empty() || !row.compile_error.empty()) {
      record["ours_us"] = nullptr;
      record["unsupported"] =
          row.unsupported.empty() ? "compile error: " + row.compile_error : row.unsupported;
      std::printf("%-40s unsupported: %s\n", row.name.c_str(),
                  record["unsupported"].get<std::string>().substr(0, 90).c_str());
      workloads.push_back(record);
      continue;
    }
    const te::Program& program = *row.program;
    std::vector<te::HostBuffer> inputs;
    std::vector<const void*> data;
    for (std::size_t i = 0; i < program.inputs().size(); ++i) {
      const te::Tensor& t = program.inputs()[i];
      inputs.push_back(te::HostBuffer::random(t.dtype(), t.shape(), 1000 + 31 * index + i));
    }
    for (const auto& b : inputs) data.push_back(b.data());
    codegen::FusedKernel kernel(context, program, row.source, std::move(row.compiled));
    codegen::DeviceBindings bindings = kernel.bind(data);
    for (auto& out : bindings.outputs) out.fill_bytes(0xFF);
    kernel.launch(bindings, stream.get());
    stream.synchronize();
    std::vector<te::HostBuffer> gpu;
    for (std::size_t o = 0; o < program.outputs().size(); ++o) {
      gpu.emplace_back(program.outputs()[o].dtype(), program.outputs()[o].shape());
      bindings.outputs[o].copy_to_host(gpu.back().data(), gpu.back().size_bytes());
    }
    const codegen::ReferenceCheck check =
        codegen::check_against_reference(*row.plan, inputs, gpu, [&](std::int64_t rows_wanted) {
          te::Shape shape = row.entry.shape;
          shape["M"] = rows_wanted;
          return te::build_workload(row.entry.workload, shape);
        });
    const runtime::Timing ours = timer.measure([&](CUstream s) { kernel.launch(bindings, s); }, timing);

    const auto& anchor = row.plan->anchor;
    runtime::DeviceBuffer gemm_out(context, static_cast<std::size_t>(anchor.m * anchor.n * 2));
    auto input_of = [&](const te::Tensor& t) -> const runtime::DeviceBuffer& {
      for (std::size_t i = 0; i < program.inputs().size(); ++i) {
        if (program.inputs()[i].same_as(t)) return bindings.inputs[i];
      }
      throw InternalError("operand is not a program input");
    };
    const CUdeviceptr x = input_of(anchor.a).get(), w = input_of(anchor.b).get();
    const runtime::Timing gemm = timer.measure(
        [&](CUstream s) { cublas.run(x, w, gemm_out.get(), anchor.m, anchor.n, anchor.k, s); }, timing);

    record["ours_us"] = ours.median_us;
    record["ours_cv"] = ours.cv;
    record["cublas_gemm_us"] = gemm.median_us;
    record["cublas_gemm_cv"] = gemm.cv;
    record["ours_over_gemm"] = ours.median_us / gemm.median_us;
    record["residual_us"] = ours.median_us - gemm.median_us;
    record["tflops"] = static_cast<double>(row.flops) / (ours.median_us * 1e6);
    record["max_rel_err"] = check.max_rel_error;
    record["correct"] = check.ok;
    record["schedule"] = schedule::to_json(row.source.schedule);
    record["schedule_source"] = row.schedule_source;
    record["tune_seconds"] = row.tune_seconds ? nlohmann::json(*row.tune_seconds) : nlohmann::json();
    std::printf("%-40s %10.1f %10.1f %9.3f %10.1f %8.1f %10.2e%s\n", row.name.c_str(), ours.median_us,
                gemm.median_us, ours.median_us / gemm.median_us, ours.median_us - gemm.median_us,
                record["tflops"].get<double>(), check.max_rel_error, check.ok ? "" : "  WRONG");
    std::fflush(stdout);
    workloads.push_back(record);
  }
  nlohmann::json result = {{"device", fingerprint.name},
                           {"fingerprint", runtime::fingerprint_to_json(fingerprint)},
                           {"date", today()},
                           {"variant", variant.empty() ? "default" : variant},
                           {"timing", "CUPTI kernel durations, median of " + std::to_string(repeats) +
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
