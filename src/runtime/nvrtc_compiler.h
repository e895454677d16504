// Compiling CUDA C++ source strings with NVRTC to CUBIN or PTX, with the log and per-kernel resource usage.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace comfuse::runtime {

/// What NVRTC produces.
enum class OutputKind { cubin, ptx };

/// "cubin" or "ptx".
const char* output_kind_name(OutputKind kind);

/// How to compile one program.
struct CompileOptions {
  /// The real architecture; PTX output targets the matching virtual one (sm_90a -> compute_90a).
  std::string arch = "sm_90a";
  OutputKind output = OutputKind::cubin;
  /// Further NVRTC options, appended after comfuse's own (e.g. "-DTILE=128", "--maxrregcount=128").
  std::vector<std::string> extra;
  /// The file name NVRTC reports in diagnostics.
  std::string program_name = "comfuse_kernel.cu";
};

/// Resources one kernel uses, as ptxas reports them. Registers are cross-checked against the cubin's ELF.
struct ResourceUsage {
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0;
  /// Static shared memory (without the 1 KB the hardware reserves per block on sm_90).
  int static_shared_bytes = 0;
  int barriers = 0;

  bool operator==(const ResourceUsage&) const = default;
};

/// One compiled program.
struct CompiledProgram {
  OutputKind output = OutputKind::cubin;
  /// The cubin bytes (an ELF image) or the PTX text.
  std::string image;
  std::string arch;
  /// Every option passed to NVRTC, in order.
  std::vector<std::string> options;
  /// NVRTC's program log (ptxas's resource report included for cubins).
  std::string log;
  /// nvrtc_version() at compile time.
  std::string nvrtc_version;
  /// Per-kernel resources by symbol name; empty for PTX.
  std::map<std::string, ResourceUsage> kernels;

  bool operator==(const CompiledProgram&) const = default;
};

/// Compiles `source`. Works without a GPU. A compile failure is a RuntimeError naming nvrtcCompileProgram
/// with the NVRTC result and the full program log (also in log()); an invalid option is reported the same
/// way.
CompiledProgram compile(std::string_view source, const CompileOptions& options = {});

/// The options compile() passes to NVRTC for `options`, in order: architecture, ptxas verbosity (cubins),
/// include directories, then options.extra.
std::vector<std::string> nvrtc_options(const CompileOptions& options);

/// The NVRTC version as "major.minor.patch" when the loaded NVRTC matches the toolkit comfuse was configured
/// with (the patch comes from there), else "major.minor".
std::string nvrtc_version();

/// The toolkit include directories handed to NVRTC, existing ones only, without duplicates, in this order:
/// beside the loaded libnvrtc (<lib>/../include), $CUDA_HOME/include, $CUDA_PATH/include, the directories
/// found at configure time, /usr/local/cuda/include.
std::vector<std::string> toolkit_include_dirs();

/// Reads a ptxas "-v" report into per-kernel usage keyed by entry name. Lines it does not know are ignored.
std::map<std::string, ResourceUsage> parse_ptxas_report(std::string_view log);

}  // namespace comfuse::runtime
