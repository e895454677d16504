// The device fingerprint recorded in tuning logs: what a measurement ran on, as a typed struct with JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "runtime/driver.h"

namespace comfuse::runtime {

/// One GPU and the software stack around it. JSON keys: arch, name, cc, sms, memory_bytes,
/// l2_bytes, max_shared_per_block_optin_bytes, sm_clock_khz, memory_clock_khz, driver, driver_cuda, cuda,
/// nvrtc, uuid. Strings may be empty when the platform does not say (driver without /proc/driver/nvidia or
/// NVML).
struct DeviceFingerprint {
  /// The architecture comfuse compiles for: "sm_<major><minor>", with "a" from compute capability 9.0 on.
  std::string arch;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sms = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t max_shared_per_block_optin_bytes = 0;
  int sm_clock_khz = 0;
  int memory_clock_khz = 0;
  /// The kernel driver's version ("580.159.04").
  std::string driver;
  /// The CUDA version the driver supports ("13.0").
  std::string driver_cuda;
  /// The CUDA version comfuse was built with ("13.0").
  std::string cuda;
  /// nvrtc_version() ("13.0.88").
  std::string nvrtc;
  /// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
  std::string uuid;

  bool operator==(const DeviceFingerprint&) const = default;
};

/// The fingerprint of device `ordinal`. Throws NoCudaDeviceError when there is no such device.
DeviceFingerprint read_fingerprint(int ordinal = 0, const Driver& driver = Driver::get());

/// The architecture name for a compute capability (9.0 -> "sm_90a", 8.0 -> "sm_80").
std::string arch_for(int cc_major, int cc_minor);

/// JSON with the keys listed on DeviceFingerprint; "cc" is "major.minor".
nlohmann::json fingerprint_to_json(const DeviceFingerprint& fingerprint);

/// The inverse of fingerprint_to_json, exact for every value it writes. A missing or unknown key, or a value
/// of the wrong type, is a CompileError naming the JSON path under `path` ("target.sms: expected an integer",
/// "target.uuid: missing", "target.colour: unknown field").
DeviceFingerprint fingerprint_from_json(const nlohmann::json& json, const std::string& path = "target");

/// A few readable lines, indented by `indent`.
std::string describe(const DeviceFingerprint& fingerprint, const std::string& indent = "  ");

/// nlohmann::json conversions (ADL); from_json reports paths under "target".
void to_json(nlohmann::json& json, const DeviceFingerprint& fingerprint);
void from_json(const nlohmann::json& json, DeviceFingerprint& fingerprint);

}  // namespace comfuse::runtime
