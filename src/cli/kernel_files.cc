// Implementation of write_kernel_files.
#include "cli/kernel_files.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "support/error.h"

namespace comfuse::cli {
namespace {

// Writes `bytes` to `path`, failing loudly: a half-written kernel file is worse than none.
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << bytes;
  file.close();
  if (!file) throw RuntimeError("write", -1, "cannot write '" + path + "'");
}

}  // namespace

KernelFiles write_kernel_files(const codegen::KernelSource& kernel, const std::string& directory,
                               const std::string& arch) {
  runtime::CompileOptions options;
  options.arch = arch;
  options.program_name = kernel.name + ".cu";
  KernelFiles files;
  files.compiled = runtime::compile(kernel.source, options);
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    throw RuntimeError("create_directories", error.value(),
                       "cannot create '" + directory + "': " + error.message());
  }
  const std::filesystem::path base = std::filesystem::path(directory) / kernel.name;
  files.source_path = base.string() + ".cu";
  files.cubin_path = base.string() + ".cubin";
  write_file(files.source_path, kernel.source);
  write_file(files.cubin_path, files.compiled.image);
  return files;
}

}  // namespace comfuse::cli
