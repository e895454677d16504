// The `comfuse` command: dispatches to its subcommands.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli/devices_command.h"
#include "cli/emit_command.h"
#include "cli/replay_command.h"
#include "cli/show_command.h"
#include "cli/trace_command.h"
#include "cli/tune_command.h"
#include "comfuse/version.h"
#include "support/error.h"

namespace {

constexpr const char* kUsage =
    "usage: comfuse <command> [args]\n"
    "commands:\n"
    "  show      the suite workloads: program, op graph, workload key (show --list for all)\n"
    "  emit      a workload's fused kernel as CUDA source and cubin (no GPU needed)\n"
    "  tune      autotune a workload's fused kernel on the GPU, logging every candidate (--log FILE)\n"
    "  replay    the kernel a tuning log chose, regenerated, checked and written (no GPU needed)\n"
    "  trace     a fused kernel run once with timestamps at its phases: where each warpgroup's time goes\n"
    "  devices   each GPU's fingerprint\n"
    "  version   the comfuse version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "show") return comfuse::cli::run_show(args, std::cout, std::cerr);
    if (command == "emit") return comfuse::cli::run_emit(args, std::cout, std::cerr);
    if (command == "tune") {
      // Only here is it known whether stderr is a terminal, where the progress bar redraws in place.
      return comfuse::cli::run_tune(args, std::cout, std::cerr, ::isatty(STDERR_FILENO) == 1);
    }
    if (command == "replay") return comfuse::cli::run_replay(args, std::cout, std::cerr);
    if (command == "trace") return comfuse::cli::run_trace(args, std::cout, std::cerr);
    if (command == "devices") return comfuse::cli::run_devices(args, std::cout, std::cerr);
    if (command == "version" || command == "--version") {
      std::cout << "comfuse " << comfuse::kVersion << "\n";
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      std::cout << kUsage;
      return 0;
    }
    std::cerr << "comfuse: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const comfuse::CompileError& error) {
    std::cerr << "comfuse: " << error.what() << "\n";
    return 2;
  } catch (const comfuse::RuntimeError& error) {
    std::cerr << "comfuse: " << error.what() << "\n";
    return 4;
  } catch (const std::exception& error) {
    std::cerr << "comfuse: internal error: " << error.what() << "\n";
    return 70;
  }
}
