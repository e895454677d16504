// The device fingerprint's JSON: exact round trip and errors that name the JSON path.
#include "runtime/fingerprint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace comfuse::runtime {
namespace {

DeviceFingerprint h200() {
  DeviceFingerprint f;
  f.arch = "sm_90a";
  f.name = "NVIDIA H200";
  f.cc_major = 9;
  f.cc_minor = 0;
  f.sms = 132;
  f.memory_bytes = 150754820096;  // Above 2^32: must survive as a 64-bit integer.
  f.l2_bytes = 62914560;
  f.max_shared_per_block_optin_bytes = 232448;
  f.sm_clock_khz = 1980000;
  f.memory_clock_khz = 3201000;
  f.driver = "580.159.04";
  f.driver_cuda = "13.0";
  f.cuda = "13.0";
  f.nvrtc = "13.0.88";
  f.uuid = "GPU-0123abcd-4567-89ef-0123-456789abcdef";
  return f;
}

void expect_error(const nlohmann::json& json, const std::string& expected,
                  const std::string& path = "target") {
  try {
    fingerprint_from_json(json, path);
    FAIL() << "accepted " << json.dump();
  } catch (const CompileError& error) {
    EXPECT_EQ(std::string(error.what()), expected);
  }
}

TEST(Fingerprint, JsonRoundTripIsExact) {
  const DeviceFingerprint original = h200();
  const nlohmann::json json = fingerprint_to_json(original);
  EXPECT_EQ(json.at("cc"), "9.0");
  EXPECT_EQ(json.at("sms"), 132);
  const std::string text = json.dump();
  const DeviceFingerprint back = fingerprint_from_json(nlohmann::json::parse(text));
  EXPECT_EQ(back, original);
  EXPECT_EQ(fingerprint_to_json(back).dump(), text);
}

TEST(Fingerprint, NlohmannConversions) {
  const nlohmann::json json = h200();
  EXPECT_EQ(json.get<DeviceFingerprint>(), h200());
}

TEST(Fingerprint, WrongTypeNamesThePath) {
  nlohmann::json json = fingerprint_to_json(h200());
  json["sms"] = "132";
  expect_error(json, "target.sms: expected an integer");
  json = fingerprint_to_json(h200());
  json["sms"] = 132.5;
  expect_error(json, "target.sms: expected an integer");
  json = fingerprint_to_json(h200());
  json["name"] = 7;
  expect_error(json, "target.name: expected a string");
  json = fingerprint_to_json(h200());
  json["sm_clock_khz"] = 5000000000LL;
  expect_error(json, "target.sm_clock_khz: 5000000000 is out of range");
}

TEST(Fingerprint, MissingAndUnknownFieldsNameThePath) {
  nlohmann::json json = fingerprint_to_json(h200());
  json.erase("uuid");
  expect_error(json, "target.uuid: missing");
  json = fingerprint_to_json(h200());
  json["colour"] = "green";
  expect_error(json, "target.colour: unknown field");
  expect_error(nlohmann::json::array(), "log[3].target: expected an object", "log[3].target");
}

TEST(Fingerprint, ComputeCapabilityIsMajorDotMinor) {
  nlohmann::json json = fingerprint_to_json(h200());
  json["cc"] = "9";
  expect_error(json, "target.cc: expected \"major.minor\", got \"9\"");
}

TEST(Fingerprint, ArchitectureNames) {
  EXPECT_EQ(arch_for(9, 0), "sm_90a");
  EXPECT_EQ(arch_for(10, 0), "sm_100a");
  EXPECT_EQ(arch_for(8, 0), "sm_80");
  EXPECT_EQ(arch_for(8, 9), "sm_89");
}

TEST(Fingerprint, ReadableDescription) {
  const std::string text = describe(h200());
  EXPECT_NE(text.find("NVIDIA H200, compute capability 9.0 (sm_90a), 132 SMs"), std::string::npos) << text;
  EXPECT_NE(text.find("clocks: SM 1980 MHz, memory 3201 MHz"), std::string::npos) << text;
  EXPECT_NE(text.find("driver 580.159.04 (CUDA 13.0); built with CUDA 13.0, NVRTC 13.0.88"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace comfuse::runtime
