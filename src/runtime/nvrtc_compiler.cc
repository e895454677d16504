// NVRTC compilation: options, include directories, the program log and ptxas's resource report.
#include "runtime/nvrtc_compiler.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include "runtime/elf_reader.h"
#include "support/error.h"

#ifndef COMFUSE_CUDA_INCLUDE_DIRS
#define COMFUSE_CUDA_INCLUDE_DIRS ""
#endif
#ifndef COMFUSE_CUDA_TOOLKIT_VERSION
#define COMFUSE_CUDA_TOOLKIT_VERSION ""
#endif

namespace comfuse::runtime {
namespace {

void check(nvrtcResult result, const char* api, const std::string& detail = {}, const std::string& log = {}) {
  if (result == NVRTC_SUCCESS) return;
  std::string message = nvrtcGetErrorString(result);
  if (!detail.empty()) message += ": " + detail;
  throw RuntimeError(api, static_cast<int>(result), message, log);
}

// Owns an nvrtcProgram.
class Program {
 public:
  Program(std::string_view source, const std::string& name) {
    std::string text(source);
    check(nvrtcCreateProgram(&program_, text.c_str(), name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram", "program '" + name + "'");
  }
  ~Program() { nvrtcDestroyProgram(&program_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcProgram get() const { return program_; }

  std::string log() const {
    std::size_t size = 0;
    check(nvrtcGetProgramLogSize(program_, &size), "nvrtcGetProgramLogSize");
    std::string log(size, '\0');
    check(nvrtcGetProgramLog(program_, log.data()), "nvrtcGetProgramLog");
    while (!log.empty() && log.back() == '\0') log.pop_back();
    return log;
  }

 private:
  nvrtcProgram program_ = nullptr;
};

// sm_90a -> compute_90a; a virtual architecture is kept.
std::string virtual_arch(const std::string& arch) {
  if (arch.starts_with("sm_")) return "compute_" + arch.substr(3);
  return arch;
}

void add_dir(std::vector<std::string>& dirs, std::set<std::string>& seen, const std::filesystem::path& dir) {
  std::error_code error;
  if (dir.empty() || !std::filesystem::is_directory(dir, error)) return;
  std::string canonical = std::filesystem::canonical(dir, error).string();
  if (error || !seen.insert(canonical).second) return;
  dirs.push_back(dir.lexically_normal().string());
}

int parse_int(const std::string& text, const std::regex& pattern) {
  std::smatch match;
  return std::regex_search(text, match, pattern) ? std::stoi(match[1].str()) : 0;
}

}  // namespace

const char* output_kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::cubin:
      return "cubin";
    case OutputKind::ptx:
      return "ptx";
  }
  return "unknown";
}

std::vector<std::string> toolkit_include_dirs() {
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code error;
    std::filesystem::path library = std::filesystem::canonical(info.dli_fname, error);
    if (!error) add_dir(dirs, seen, library.parent_path().parent_path() / "include");
  }
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable); root != nullptr && *root != '\0') {
      add_dir(dirs, seen, std::filesystem::path(root) / "include");
    }
  }
  std::string configured = COMFUSE_CUDA_INCLUDE_DIRS;
  std::size_t start = 0;
  while (start <= configured.size()) {
    std::size_t end = configured.find(';', start);
    if (end == std::string::npos) end = configured.size();
    add_dir(dirs, seen, configured.substr(start, end - start));
    start = end + 1;
  }
  add_dir(dirs, seen, "/usr/local/cuda/include");
  return dirs;
}

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  std::string version = std::to_string(major) + "." + std::to_string(minor);
  std::string toolkit = COMFUSE_CUDA_TOOLKIT_VERSION;
  if (toolkit.starts_with(version + ".")) return toolkit;
  return version;
}

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  std::vector<std::string> out;
  if (options.output == OutputKind::cubin) {
    out.push_back("--gpu-architecture=" + options.arch);
    out.push_back("--no-cache");
    out.push_back("--ptxas-options=-v");
  } else {
    out.push_back("--gpu-architecture=" + virtual_arch(options.arch));
    out.push_back("--no-cache");
  }
  for (const std::string& dir : toolkit_include_dirs()) out.push_back("--include-path=" + dir);
  out.insert(out.end(), options.extra.begin(), options.extra.end());
  return out;
}

std::map<std::string, ResourceUsage> parse_ptxas_report(std::string_view log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex stack(R"((\d+) bytes stack frame)");
  static const std::regex spill_stores(R"((\d+) bytes spill stores)");
  static const std::regex spill_loads(R"((\d+) bytes spill loads)");

  std::map<std::string, ResourceUsage> usage;
  std::string current_entry;
  std::string properties_of;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    const std::string line(log.substr(start, end - start));
    start = end + 1;
    if (line.find("ptxas") == std::string::npos) continue;
    std::smatch match;
    if (std::regex_search(line, match, entry)) {
      current_entry = match[1].str();
      properties_of.clear();
      usage[current_entry];
    } else if (std::regex_search(line, match, properties)) {
      properties_of = match[1].str();
    } else if (line.find("bytes stack frame") != std::string::npos) {
      // Non-entry functions get property lines too; only the entry's own count.
      if (!current_entry.empty() && properties_of == current_entry) {
        ResourceUsage& kernel = usage[current_entry];
        kernel.stack_frame_bytes = parse_int(line, stack);
        kernel.spill_store_bytes = parse_int(line, spill_stores);
        kernel.spill_load_bytes = parse_int(line, spill_loads);
      }
    } else if (!current_entry.empty() && std::regex_search(line, match, registers)) {
      ResourceUsage& kernel = usage[current_entry];
      kernel.registers = std::stoi(match[1].str());
      kernel.barriers = parse_int(line, barriers);
      kernel.static_shared_bytes = parse_int(line, smem);
    }
  }
  return usage;
}

CompiledProgram compile(std::string_view source, const CompileOptions& options) {
  CompiledProgram result;
  result.output = options.output;
  result.arch = options.arch;
  result.options = nvrtc_options(options);
  result.nvrtc_version = nvrtc_version();

  Program program(source, options.program_name);
  std::vector<const char*> pointers;
  for (const std::string& option : result.options) pointers.push_back(option.c_str());
  nvrtcResult status = nvrtcCompileProgram(program.get(), static_cast<int>(pointers.size()), pointers.data());
  result.log = program.log();
  check(status, "nvrtcCompileProgram",
        "program '" + options.program_name + "' for " + options.arch + " failed to compile", result.log);

  std::size_t size = 0;
  if (options.output == OutputKind::cubin) {
    check(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    result.image.assign(size, '\0');
    check(nvrtcGetCUBIN(program.get(), result.image.data()), "nvrtcGetCUBIN");
    result.kernels = parse_ptxas_report(result.log);
    // The ELF is authoritative for registers and names every kernel, even one the report left out.
    for (const CubinKernel& kernel : read_cubin_kernels(result.image)) {
      ResourceUsage& usage = result.kernels[kernel.name];
      if (kernel.registers >= 0) usage.registers = kernel.registers;
      if (kernel.frame_bytes >= 0) usage.stack_frame_bytes = kernel.frame_bytes;
    }
  } else {
    check(nvrtcGetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
    result.image.assign(size, '\0');
    check(nvrtcGetPTX(program.get(), result.image.data()), "nvrtcGetPTX");
    while (!result.image.empty() && result.image.back() == '\0') result.image.pop_back();
  }
  return result;
}

}  // namespace comfuse::runtime
