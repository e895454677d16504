// Implementation of `comfuse emit`.
#include "cli/emit_command.h"

#include <fstream>
#include <sstream>

#include "cli/kernel_files.h"
#include "codegen/kernel_source.h"
#include "runtime/nvrtc_compiler.h"
#include "support/error.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

constexpr const char* kUsage =
    "usage: comfuse emit WORKLOAD [--shape M=…,K=…,N=…] [--schedule FILE.json] [--target sm_90a] -o DIR\n";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CompileError("cannot read schedule file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int run_emit(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string workload, shape_text, schedule_file, target = "sm_90a", directory;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--shape" && has_value) {
      shape_text = args[++i];
    } else if (arg == "--schedule" && has_value) {
      schedule_file = args[++i];
    } else if (arg == "--target" && has_value) {
      target = args[++i];
    } else if ((arg == "-o" || arg == "--output") && has_value) {
      directory = args[++i];
    } else if (!arg.empty() && arg[0] != '-' && workload.empty()) {
      workload = arg;
    } else {
      err << "comfuse emit: unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (workload.empty() || directory.empty()) {
    err << kUsage;
    return 2;
  }
  if (target != "sm_90a") {
    err << "comfuse emit: target '" << target
        << "' is not supported: the kernels use wgmma and TMA, which need sm_90a\n";
    return 2;
  }
  try {
    const te::Program program =
        te::build_workload(workload, shape_text.empty() ? te::Shape{} : te::parse_shape(shape_text));
    const schedule::FusionPlan plan = schedule::plan_fusion(program);
    schedule::Schedule schedule = schedule::default_schedule(plan);
    if (!schedule_file.empty()) {
      nlohmann::json json;
      try {
        json = nlohmann::json::parse(read_file(schedule_file));
      } catch (const nlohmann::json::parse_error& error) {
        throw CompileError(schedule_file + ": not valid JSON: " + error.what());
      }
      schedule = schedule::schedule_from_json(json);
    }
    const codegen::KernelSource kernel = codegen::emit_kernel(plan, schedule, te::workload_key(program));
    const KernelFiles files = write_kernel_files(kernel, directory, target);
    const runtime::CompiledProgram& compiled = files.compiled;
    out << "workload " << workload << " key " << te::workload_key(program) << "\n";
    out << "schedule " << schedule::to_string(schedule) << "\n";
    out << "launch grid " << kernel.launch.grid_x << (kernel.launch.persistent ? " tiles (persistent: one CTA per SM at most)" : "")
        << " block " << kernel.launch.block_x << " cluster "
        << kernel.launch.cluster_x << " shared " << kernel.launch.shared_bytes << " bytes\n";
    for (const auto& [name, usage] : compiled.kernels) {
      out << "resources " << name << ": " << usage.registers << " registers, " << usage.spill_store_bytes
          << " bytes spilled\n";
    }
    out << "wrote " << files.source_path << " and " << files.cubin_path << "\n";
    return 0;
  } catch (const CompileError& error) {
    err << "comfuse emit: " << error.what() << "\n";
    return 2;
  } catch (const RuntimeError& error) {
    err << "comfuse emit: " << error.what() << "\n";
    return 4;
  }
}

}  // namespace comfuse::cli
