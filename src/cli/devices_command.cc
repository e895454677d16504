// `comfuse devices`: reads every device's fingerprint through the runtime and prints it.
#include "cli/devices_command.h"

#include <nlohmann/json.hpp>

#include "runtime/driver.h"
#include "runtime/fingerprint.h"

namespace comfuse::cli {

int run_devices(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool json = false;
  for (const std::string& arg : args) {
    if (arg == "--json") {
      json = true;
    } else {
      err << "comfuse devices: unknown argument '" << arg << "'\nusage: comfuse devices [--json]\n";
      return 2;
    }
  }
  try {
    const runtime::Driver& driver = runtime::Driver::get();
    const int count = driver.device_count();
    if (count == 0) throw runtime::NoCudaDeviceError("cuDeviceGetCount", -1, "the driver reports 0 devices");
    nlohmann::json devices = nlohmann::json::array();
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      const runtime::DeviceFingerprint fingerprint = runtime::read_fingerprint(ordinal, driver);
      if (json) {
        devices.push_back({{"device", ordinal}, {"target", runtime::fingerprint_to_json(fingerprint)}});
      } else {
        out << "device " << ordinal << ":\n" << runtime::describe(fingerprint);
      }
    }
    if (json) out << devices.dump(2) << "\n";
    return 0;
  } catch (const runtime::NoCudaDeviceError& error) {
    err << error.what() << "\n";
    return 3;
  }
}

}  // namespace comfuse::cli
