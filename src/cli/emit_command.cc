// Implementation of `comfuse emit`.
#include "cli/emit_command.h"

#include <fstream>
#include <sstream>

#include "cli/kernel_files.h"
#include "codegen/b2b_emitter.h"
#include "codegen/kernel_source.h"
#include "runtime/nvrtc_compiler.h"
#include "support/error.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

constexpr const char* kUsage =
    "usage: comfuse emit WORKLOAD [--shape M=…,K=…,N=…] [--schedule FILE.json] [--target sm_90a] -o DIR\n"
    "       comfuse emit WORKLOAD [--shape …] --fused-b2b [--bm 64|128] [--bn1 64|128] [--stages N]\n"
    "                    [--overlap | --pingpong] [--persistent]\n"
    "                    [--operand registers|shared] [--store direct|tma] -o DIR\n"
    "                    (back-to-back workloads: the fused kernel, GEMM1 → tiles → GEMM2 in one)\n";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CompileError("cannot read schedule file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The launch configuration, each entry point's resources and the files written.
void print_kernel(const codegen::KernelSource& kernel, const KernelFiles& files, std::ostream& out) {
  std::string persistent;
  if (kernel.launch.persistent && kernel.launch.cluster_x > 1) {
    persistent = " (persistent: as many clusters as the device runs at once walk the row blocks)";
  } else if (kernel.launch.persistent && kernel.launch.group_x > 1) {
    persistent = " (persistent, cooperative: groups of " + std::to_string(kernel.launch.group_x) +
                 " CTAs, as many as the device runs at once, walk the row blocks and exchange through global "
                 "memory)";
  } else if (kernel.launch.persistent) {
    persistent = std::string(kernel.launch.row_blocks ? " row blocks" : " tiles") +
                 " (persistent: " + std::to_string(kernel.launch.ctas_per_multiprocessor) + " CTA" +
                 (kernel.launch.ctas_per_multiprocessor > 1 ? "s" : "") + " per SM at most" +
                 (kernel.launch.row_blocks ? ", walking the row blocks)" : ")");
  }
  out << "launch grid " << kernel.launch.grid_x << persistent << " block " << kernel.launch.block_x
      << " cluster " << kernel.launch.cluster_x << " shared " << kernel.launch.shared_bytes << " bytes\n";
  if (!kernel.finish_name.empty()) {
    out << "then " << kernel.finish_name << " grid " << kernel.launch.finish_grid_x
        << (kernel.launch.persistent_finish ? " (persistent: as many CTAs as the device runs at once)" : "")
        << " block " << kernel.launch.finish_block_x << " (the deferred reduction's finish kernel)\n";
  }
  for (const auto& [name, usage] : files.compiled.kernels) {
    out << "resources " << name << ": " << usage.registers << " registers, " << usage.spill_store_bytes
        << " bytes spilled\n";
  }
  out << "wrote " << files.source_path << " and " << files.cubin_path << "\n";
}

}  // namespace

int run_emit(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string workload, shape_text, schedule_file, target = "sm_90a", directory;
  bool fused_b2b = false;
  codegen::B2BSchedule b2b;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--shape" && has_value) {
      shape_text = args[++i];
    } else if (arg == "--schedule" && has_value) {
      schedule_file = args[++i];
    } else if (arg == "--fused-b2b") {
      fused_b2b = true;
    } else if (arg == "--overlap") {
      b2b.overlap = true;
    } else if (arg == "--pingpong") {
      b2b.pingpong = true;
    } else if (arg == "--persistent") {
      b2b.persistent = true;
    } else if ((arg == "--operand" || arg == "--store") && has_value) {
      // Two-valued knobs: the first value is the default (false), the second sets the knob.
      const bool operand = arg == "--operand";
      const char* off = operand ? "registers" : "direct";
      const char* on = operand ? "shared" : "tma";
      const std::string value = args[++i];
      if (value != off && value != on) {
        err << "comfuse emit: " << arg << " takes " << off << " or " << on << ", not '" << value << "'\n";
        return 2;
      }
      (operand ? b2b.operand_in_shared : b2b.tma_store) = value == on;
    } else if ((arg == "--stages" || arg == "--bm" || arg == "--bn1") && has_value) {
      int& knob = arg == "--stages" ? b2b.stages : arg == "--bm" ? b2b.bm : b2b.bn1;
      try {
        knob = std::stoi(args[++i]);
      } catch (const std::exception&) {
        err << "comfuse emit: " << arg << " takes an integer, not '" << args[i] << "'\n";
        return 2;
      }
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
  if (fused_b2b && !schedule_file.empty()) {
    err << "comfuse emit: --schedule is for single-GEMM kernels; the fused back-to-back kernel takes "
           "--bm, --bn1, --stages, --overlap, --pingpong, --persistent, --operand and --store\n";
    return 2;
  }
  try {
    const te::Program program =
        te::build_workload(workload, shape_text.empty() ? te::Shape{} : te::parse_shape(shape_text));
    if (fused_b2b) {
      const codegen::KernelSource kernel =
          codegen::emit_b2b_kernel(schedule::plan_b2b(program), b2b, te::workload_key(program));
      const KernelFiles files = write_kernel_files(kernel, directory, target);
      out << "workload " << workload << " key " << te::workload_key(program) << "\n";
      out << "fused back-to-back kernel, " << schedule::to_string(b2b) << "\n";
      print_kernel(kernel, files, out);
      return 0;
    }
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
    out << "workload " << workload << " key " << te::workload_key(program) << "\n";
    out << "schedule " << schedule::to_string(schedule) << "\n";
    print_kernel(kernel, files, out);
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
