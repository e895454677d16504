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

/// Resources one kernel uses. Registers and the stack frame come from the cubin's ELF attributes; spills,
/// static shared memory and barriers from ptxas's report in the NVRTC log. A field is -1 when its source did
/// not cover the kernel (a kernel absent from the report), never a guess.
struct ResourceUsage {
  int registers = -1;
  int spill_store_bytes = -1;
  int spill_load_bytes = -1;
  int stack_frame_bytes = -1;
  /// Static shared memory (without the 1 KB the hardware reserves per block on sm_90).
  int static_shared_bytes = -1;
  int barriers = -1;

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

/// The options compile() passes to NVRTC for `options`, in order: architecture, --no-cache, ptxas verbosity
/// (cubins), include directories, then options.extra. NVRTC 13 caches compiled code in the driver's compute
/// cache when a driver is present, and a hit skips ptxas and so its resource report; comfuse keeps its own
/// cache (KernelCache), so NVRTC's is turned off.
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
