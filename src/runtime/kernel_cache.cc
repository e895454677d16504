// Cache entries: layout, checks, atomic writes, and the compile-through path.
#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "support/error.h"
#include "support/sha256.h"

namespace comfuse::runtime {
namespace {

// An entry is: kMagic, then "<meta bytes> <image bytes> <sha256 of meta and image>\n", then the metadata
// (JSON), then the image.
constexpr std::string_view kMagic = "comfuse-kernel-cache v1\n";

void append_field(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out += field;
  out += ';';
}

nlohmann::json usage_to_json(const ResourceUsage& usage) {
  return {{"registers", usage.registers},
          {"spill_store_bytes", usage.spill_store_bytes},
          {"spill_load_bytes", usage.spill_load_bytes},
          {"stack_frame_bytes", usage.stack_frame_bytes},
          {"static_shared_bytes", usage.static_shared_bytes},
          {"barriers", usage.barriers}};
}

ResourceUsage usage_from_json(const nlohmann::json& json) {
  ResourceUsage usage;
  usage.registers = json.at("registers").get<int>();
  usage.spill_store_bytes = json.at("spill_store_bytes").get<int>();
  usage.spill_load_bytes = json.at("spill_load_bytes").get<int>();
  usage.stack_frame_bytes = json.at("stack_frame_bytes").get<int>();
  usage.static_shared_bytes = json.at("static_shared_bytes").get<int>();
  usage.barriers = json.at("barriers").get<int>();
  return usage;
}

std::string serialize(const std::string& key, const CompiledProgram& program) {
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [name, usage] : program.kernels) kernels[name] = usage_to_json(usage);
  const nlohmann::json meta = {{"key", key},           {"output", output_kind_name(program.output)},
                               {"arch", program.arch}, {"options", program.options},
                               {"log", program.log},   {"nvrtc_version", program.nvrtc_version},
                               {"kernels", kernels}};
  const std::string meta_text = meta.dump();
  std::string entry(kMagic);
  entry += std::to_string(meta_text.size()) + " " + std::to_string(program.image.size()) + " " +
           sha256_hex(meta_text + program.image) + "\n";
  entry += meta_text;
  entry += program.image;
  return entry;
}

// The program in `entry` when every check passes.
std::optional<CompiledProgram> deserialize(const std::string& key, std::string_view entry) {
  if (!entry.starts_with(kMagic)) return std::nullopt;
  entry.remove_prefix(kMagic.size());
  const std::size_t newline = entry.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  std::istringstream header{std::string(entry.substr(0, newline))};
  std::size_t meta_size = 0;
  std::size_t image_size = 0;
  std::string digest;
  std::string trailing;
  if (!(header >> meta_size >> image_size >> digest) || header >> trailing) return std::nullopt;
  entry.remove_prefix(newline + 1);
  if (meta_size > entry.size() || entry.size() - meta_size != image_size) return std::nullopt;
  if (sha256_hex(entry) != digest) return std::nullopt;
  try {
    const nlohmann::json meta = nlohmann::json::parse(entry.substr(0, meta_size));
    if (meta.at("key").get<std::string>() != key) return std::nullopt;
    CompiledProgram program;
    const std::string output = meta.at("output").get<std::string>();
    if (output == output_kind_name(OutputKind::cubin)) {
      program.output = OutputKind::cubin;
    } else if (output == output_kind_name(OutputKind::ptx)) {
      program.output = OutputKind::ptx;
    } else {
      return std::nullopt;
    }
    program.arch = meta.at("arch").get<std::string>();
    program.options = meta.at("options").get<std::vector<std::string>>();
    program.log = meta.at("log").get<std::string>();
    program.nvrtc_version = meta.at("nvrtc_version").get<std::string>();
    for (const auto& [name, usage] : meta.at("kernels").items())
      program.kernels[name] = usage_from_json(usage);
    program.image = std::string(entry.substr(meta_size));
    return program;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

[[noreturn]] void throw_io(const char* api, const std::filesystem::path& path, int error) {
  throw RuntimeError(api, error, "kernel cache file " + path.string() + ": " + std::strerror(error));
}

// A name no other process or thread uses at the same time.
std::string temporary_name(const std::string& key) {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 random{std::random_device{}()};
  return "." + key + "." + std::to_string(getpid()) + "." + std::to_string(counter++) + "." +
         std::to_string(random() % 1000000007) + ".tmp";
}

}  // namespace

const char* cache_outcome_name(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::hit:
      return "hit";
    case CacheOutcome::miss:
      return "miss";
    case CacheOutcome::corrupt:
      return "corrupt";
  }
  return "unknown";
}

KernelCache::KernelCache(std::filesystem::path dir) : dir_(dir.empty() ? default_dir() : std::move(dir)) {}

std::filesystem::path KernelCache::default_dir() {
  if (const char* dir = std::getenv("COMFUSE_CACHE_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir != nullptr && *dir != '\0') {
    return std::filesystem::path(dir) / "comfuse";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "comfuse";
  }
  return std::filesystem::path(".cache") / "comfuse";
}

std::string KernelCache::key(std::string_view source, const CompileOptions& options) {
  std::string material = "comfuse kernel cache key v1;";
  append_field(material, source);
  const std::vector<std::string> nvrtc = nvrtc_options(options);
  append_field(material, std::to_string(nvrtc.size()));
  for (const std::string& option : nvrtc) append_field(material, option);
  append_field(material, nvrtc_version());
  append_field(material, options.arch);
  append_field(material, output_kind_name(options.output));
  return sha256_hex(material);
}

std::filesystem::path KernelCache::entry_path(const std::string& key) const {
  return dir_ / "kernels" / (key + ".entry");
}

std::optional<CompiledProgram> KernelCache::load(const std::string& key, bool* corrupt) const {
  if (corrupt != nullptr) *corrupt = false;
  const std::filesystem::path path = entry_path(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string entry((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::optional<CompiledProgram> program = deserialize(key, entry);
  if (!program) {
    std::error_code ignored;  // Another process may have replaced or removed it already.
    std::filesystem::remove(path, ignored);
    if (corrupt != nullptr) *corrupt = true;
  }
  return program;
}

void KernelCache::store(const std::string& key, const CompiledProgram& program) const {
  const std::filesystem::path directory = dir_ / "kernels";
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) throw_io("mkdir", directory, error.value());

  const std::string entry = serialize(key, program);
  const std::filesystem::path temporary = directory / temporary_name(key);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw_io("open", temporary, errno);
  std::size_t written = 0;
  while (written < entry.size()) {
    const ssize_t n = ::write(fd, entry.data() + written, entry.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      throw_io("write", temporary, saved);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    throw_io("close", temporary, saved);
  }
  const std::filesystem::path path = entry_path(key);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    throw_io("rename", path, saved);
  }
}

CompiledProgram KernelCache::compile(std::string_view source, const CompileOptions& options,
                                     CacheOutcome* outcome) const {
  const std::string cache_key = key(source, options);
  bool corrupt = false;
  if (std::optional<CompiledProgram> cached = load(cache_key, &corrupt)) {
    if (outcome != nullptr) *outcome = CacheOutcome::hit;
    return std::move(*cached);
  }
  CompiledProgram program = runtime::compile(source, options);
  store(cache_key, program);
  if (outcome != nullptr) *outcome = corrupt ? CacheOutcome::corrupt : CacheOutcome::miss;
  return program;
}

}  // namespace comfuse::runtime
