// Writing a generated kernel to disk as CUDA source and cubin: shared by `comfuse emit` and `comfuse replay`
// so that both produce the same files for the same kernel.
#pragma once

#include <string>

#include "codegen/kernel_source.h"
#include "runtime/nvrtc_compiler.h"

namespace comfuse::cli {

struct KernelFiles {
  std::string source_path;  // DIR/<kernel name>.cu
  std::string cubin_path;   // DIR/<kernel name>.cubin
  runtime::CompiledProgram compiled;
};

/// Compiles `kernel` with NVRTC for `arch` (no GPU needed), then creates `directory` and writes
/// DIR/<kernel.name>.cu and DIR/<kernel.name>.cubin. Compiling first means a failed compile leaves no
/// files behind. Throws RuntimeError when NVRTC fails (with its log) or a file cannot be written.
KernelFiles write_kernel_files(const codegen::KernelSource& kernel, const std::string& directory,
                               const std::string& arch = "sm_90a");

}  // namespace comfuse::cli
