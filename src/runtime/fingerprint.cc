// Reading the device fingerprint from the driver, and its strict JSON form.
#include "runtime/fingerprint.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "runtime/nvrtc_compiler.h"
#include "support/error.h"

namespace comfuse::runtime {
namespace {

// The kernel driver's version from /proc, else from NVML loaded at run time; empty when neither answers.
std::string kernel_driver_version() {
  std::ifstream proc("/proc/driver/nvidia/version");
  if (proc) {
    std::stringstream text;
    text << proc.rdbuf();
    static const std::regex version(R"(Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+))");
    std::smatch match;
    const std::string content = text.str();
    if (std::regex_search(content, match, version)) return match[1].str();
  }
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return {};
  using Init = int (*)();
  using GetVersion = int (*)(char*, unsigned);
  auto init = reinterpret_cast<Init>(dlsym(nvml, "nvmlInit_v2"));
  auto get_version = reinterpret_cast<GetVersion>(dlsym(nvml, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<Init>(dlsym(nvml, "nvmlShutdown"));
  std::string out;
  if (init != nullptr && get_version != nullptr && init() == 0) {
    char buffer[96] = {};
    if (get_version(buffer, sizeof(buffer)) == 0) out = buffer;
    if (shutdown != nullptr) shutdown();
  }
  dlclose(nvml);
  return out;
}

std::string format_uuid(const CUuuid& uuid) {
  std::string hex;
  char byte[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(byte, sizeof(byte), "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    hex += byte;
  }
  return "GPU-" + hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

const std::set<std::string>& known_keys() {
  static const std::set<std::string> keys = {"arch",
                                             "name",
                                             "cc",
                                             "sms",
                                             "memory_bytes",
                                             "l2_bytes",
                                             "max_shared_per_block_optin_bytes",
                                             "sm_clock_khz",
                                             "memory_clock_khz",
                                             "driver",
                                             "driver_cuda",
                                             "cuda",
                                             "nvrtc",
                                             "uuid"};
  return keys;
}

const nlohmann::json& field(const nlohmann::json& json, const std::string& path, const char* key) {
  auto it = json.find(key);
  if (it == json.end()) throw CompileError(path + "." + key + ": missing");
  return *it;
}

std::string read_string(const nlohmann::json& json, const std::string& path, const char* key) {
  const nlohmann::json& value = field(json, path, key);
  if (!value.is_string()) throw CompileError(path + "." + key + ": expected a string");
  return value.get<std::string>();
}

template <typename Int>
Int read_integer(const nlohmann::json& json, const std::string& path, const char* key) {
  const nlohmann::json& value = field(json, path, key);
  if (!value.is_number_integer()) throw CompileError(path + "." + key + ": expected an integer");
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number > static_cast<std::uint64_t>(std::numeric_limits<Int>::max())) {
      throw CompileError(path + "." + key + ": " + std::to_string(number) + " is out of range");
    }
    return static_cast<Int>(number);
  }
  const auto number = value.get<std::int64_t>();
  if (number < std::numeric_limits<Int>::min() || number > std::numeric_limits<Int>::max()) {
    throw CompileError(path + "." + key + ": " + std::to_string(number) + " is out of range");
  }
  return static_cast<Int>(number);
}

}  // namespace

std::string arch_for(int cc_major, int cc_minor) {
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor) + (cc_major >= 9 ? "a" : "");
}

DeviceFingerprint read_fingerprint(int ordinal, const Driver& driver) {
  const DriverApi& api = driver.api();
  const CUdevice device = driver.device(ordinal);
  auto attribute = [&](CUdevice_attribute which) {
    int value = 0;
    driver.check(api.device_get_attribute(&value, which, device), "cuDeviceGetAttribute");
    return value;
  };

  DeviceFingerprint fingerprint;
  char name[256] = {};
  driver.check(api.device_get_name(name, sizeof(name) - 1, device), "cuDeviceGetName");
  fingerprint.name = name;
  fingerprint.cc_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  fingerprint.cc_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  fingerprint.arch = arch_for(fingerprint.cc_major, fingerprint.cc_minor);
  fingerprint.sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  std::size_t memory = 0;
  driver.check(api.device_total_mem(&memory, device), "cuDeviceTotalMem");
  fingerprint.memory_bytes = static_cast<std::int64_t>(memory);
  fingerprint.l2_bytes = attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  fingerprint.max_shared_per_block_optin_bytes =
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  fingerprint.sm_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  fingerprint.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  fingerprint.driver = kernel_driver_version();
  fingerprint.driver_cuda = cuda_version_string(driver.version());
  fingerprint.cuda = cuda_version_string(CUDA_VERSION);
  fingerprint.nvrtc = nvrtc_version();
  CUuuid uuid = {};
  driver.check(api.device_get_uuid(&uuid, device), "cuDeviceGetUuid");
  fingerprint.uuid = format_uuid(uuid);
  return fingerprint;
}

nlohmann::json fingerprint_to_json(const DeviceFingerprint& fingerprint) {
  return {{"arch", fingerprint.arch},
          {"name", fingerprint.name},
          {"cc", std::to_string(fingerprint.cc_major) + "." + std::to_string(fingerprint.cc_minor)},
          {"sms", fingerprint.sms},
          {"memory_bytes", fingerprint.memory_bytes},
          {"l2_bytes", fingerprint.l2_bytes},
          {"max_shared_per_block_optin_bytes", fingerprint.max_shared_per_block_optin_bytes},
          {"sm_clock_khz", fingerprint.sm_clock_khz},
          {"memory_clock_khz", fingerprint.memory_clock_khz},
          {"driver", fingerprint.driver},
          {"driver_cuda", fingerprint.driver_cuda},
          {"cuda", fingerprint.cuda},
          {"nvrtc", fingerprint.nvrtc},
          {"uuid", fingerprint.uuid}};
}

DeviceFingerprint fingerprint_from_json(const nlohmann::json& json, const std::string& path) {
  if (!json.is_object()) throw CompileError(path + ": expected an object");
  for (const auto& [key, value] : json.items()) {
    if (!known_keys().contains(key)) throw CompileError(path + "." + key + ": unknown field");
  }
  DeviceFingerprint fingerprint;
  fingerprint.arch = read_string(json, path, "arch");
  fingerprint.name = read_string(json, path, "name");
  const std::string cc = read_string(json, path, "cc");
  static const std::regex cc_pattern(R"(([0-9]{1,3})\.([0-9]{1,3}))");
  std::smatch match;
  if (!std::regex_match(cc, match, cc_pattern)) {
    throw CompileError(path + ".cc: expected \"major.minor\", got \"" + cc + "\"");
  }
  fingerprint.cc_major = std::stoi(match[1].str());
  fingerprint.cc_minor = std::stoi(match[2].str());
  fingerprint.sms = read_integer<int>(json, path, "sms");
  fingerprint.memory_bytes = read_integer<std::int64_t>(json, path, "memory_bytes");
  fingerprint.l2_bytes = read_integer<std::int64_t>(json, path, "l2_bytes");
  fingerprint.max_shared_per_block_optin_bytes =
      read_integer<std::int64_t>(json, path, "max_shared_per_block_optin_bytes");
  fingerprint.sm_clock_khz = read_integer<int>(json, path, "sm_clock_khz");
  fingerprint.memory_clock_khz = read_integer<int>(json, path, "memory_clock_khz");
  fingerprint.driver = read_string(json, path, "driver");
  fingerprint.driver_cuda = read_string(json, path, "driver_cuda");
  fingerprint.cuda = read_string(json, path, "cuda");
  fingerprint.nvrtc = read_string(json, path, "nvrtc");
  fingerprint.uuid = read_string(json, path, "uuid");
  return fingerprint;
}

std::string describe(const DeviceFingerprint& f, const std::string& indent) {
  constexpr double kMiB = 1024.0 * 1024.0;
  char line[512];
  std::string out;
  std::snprintf(line, sizeof(line), "%s%s, compute capability %d.%d (%s), %d SMs\n", indent.c_str(),
                f.name.c_str(), f.cc_major, f.cc_minor, f.arch.c_str(), f.sms);
  out += line;
  std::snprintf(line, sizeof(line),
                "%smemory %.0f MiB, L2 %.1f MiB, shared memory per block %lld KiB (opt-in)\n", indent.c_str(),
                static_cast<double>(f.memory_bytes) / kMiB, static_cast<double>(f.l2_bytes) / kMiB,
                static_cast<long long>(f.max_shared_per_block_optin_bytes / 1024));
  out += line;
  std::snprintf(line, sizeof(line), "%sclocks: SM %d MHz, memory %d MHz\n", indent.c_str(),
                f.sm_clock_khz / 1000, f.memory_clock_khz / 1000);
  out += line;
  std::snprintf(line, sizeof(line), "%sdriver %s (CUDA %s); built with CUDA %s, NVRTC %s\n", indent.c_str(),
                f.driver.empty() ? "unknown" : f.driver.c_str(), f.driver_cuda.c_str(), f.cuda.c_str(),
                f.nvrtc.c_str());
  out += line;
  out += indent + "uuid " + f.uuid + "\n";
  return out;
}

void to_json(nlohmann::json& json, const DeviceFingerprint& fingerprint) {
  json = fingerprint_to_json(fingerprint);
}

void from_json(const nlohmann::json& json, DeviceFingerprint& fingerprint) {
  fingerprint = fingerprint_from_json(json);
}

}  // namespace comfuse::runtime
