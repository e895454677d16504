// `comfuse devices`: exit codes and output, with or without a GPU.
#include "cli/devices_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/driver.h"
#include "runtime/fingerprint.h"

namespace comfuse::cli {
namespace {

bool have_device() {
  try {
    return runtime::Driver::get().device_count() > 0;
  } catch (const runtime::NoCudaDeviceError&) {
    return false;
  }
}

TEST(DevicesCommand, ReportsEachDeviceOrWhyThereIsNone) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run_devices({}, out, err);
  if (have_device()) {
    EXPECT_EQ(code, 0) << err.str();
    EXPECT_NE(out.str().find("device 0:"), std::string::npos) << out.str();
  } else {
    EXPECT_EQ(code, 3);
    EXPECT_TRUE(err.str().starts_with("no CUDA device: ")) << err.str();
    EXPECT_EQ(out.str(), "");
  }
}

TEST(DevicesCommand, JsonIsAnArrayOfFingerprints) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run_devices({"--json"}, out, err);
  if (!have_device()) {
    EXPECT_EQ(code, 3);
    EXPECT_TRUE(err.str().starts_with("no CUDA device: ")) << err.str();
    return;
  }
  ASSERT_EQ(code, 0) << err.str();
  const nlohmann::json devices = nlohmann::json::parse(out.str());
  ASSERT_TRUE(devices.is_array());
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0].at("device"), 0);
  // Each target reads back as a fingerprint.
  EXPECT_GT(runtime::fingerprint_from_json(devices[0].at("target"), "[0].target").sms, 0);
}

TEST(DevicesCommand, UnknownArgument) {
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(run_devices({"--all"}, out, err), 2);
  EXPECT_EQ(err.str(), "comfuse devices: unknown argument '--all'\nusage: comfuse devices [--json]\n");
}

}  // namespace
}  // namespace comfuse::cli
