// Tuning record JSON: every rejection with its exact message.
#include <gtest/gtest.h>

#include "search_fixture.h"
#include "support/error.h"

namespace comfuse::search {
namespace {

using nlohmann::json;

std::string error_of(const json& j) {
  try {
    record_from_json(j);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "<no error>";
}

json good() {
  static const json j = record_to_json(make_record(10));
  return j;
}

TEST(TuningRecordError, Messages) {
  json j = good();
  j["v"] = 2;
  EXPECT_EQ(error_of(j), "log version 2 is newer than this comfuse (1): upgrade comfuse");
  j = good();
  j["v"] = "1";
  EXPECT_EQ(error_of(j), "v: expected an integer");
  j = good();
  j["v"] = 0;
  EXPECT_EQ(error_of(j), "v: unknown log version 0");
  j = good();
  j.erase("v");
  EXPECT_EQ(error_of(j), "v: missing");
  j = good();
  j["colour"] = 1;
  EXPECT_EQ(error_of(j), "colour: unknown field");
  j = good();
  j.erase("timestamp");
  EXPECT_EQ(error_of(j), "timestamp: missing");
  EXPECT_EQ(error_of(json::array()), "record: expected an object");
  j = good();
  j["workload"].erase("program");
  EXPECT_EQ(error_of(j), "workload.program: missing");
  j = good();
  j["workload"]["key"] = 5;
  EXPECT_EQ(error_of(j), "workload.key: expected a string");
  j = good();
  j["workload"]["key"] = "sha256:00";
  EXPECT_EQ(error_of(j), "workload.key: 'sha256:00' is not the key of workload.program ('" +
                             good()["workload"]["key"].get<std::string>() + "')");
  j = good();
  j["target"]["sms"] = "132";
  EXPECT_EQ(error_of(j), "target.sms: expected an integer");
  j = good();
  j["compiler"]["options"] = json::array({1});
  EXPECT_EQ(error_of(j), "compiler.options[0]: expected a string");
  j = good();
  j["compiler"]["options"] = "x";
  EXPECT_EQ(error_of(j), "compiler.options: expected an array");
  j = good();
  j["compiler"]["extra"] = "x";
  EXPECT_EQ(error_of(j), "compiler.extra: unknown field");
  j = good();
  j["schedule"]["warp_roles"] = "pingpong";
  EXPECT_EQ(error_of(j), "schedule.warp_roles: unknown value 'pingpong' (valid: cooperative, ping_pong)");
  j = good();
  j["status"] = "fine";
  EXPECT_EQ(error_of(j), "status: unknown value 'fine'");
  j = good();
  j["error"] = nullptr;
  EXPECT_EQ(error_of(j), "error: expected a string");
  j = good();
  j["times_us"] = json::array({1.0, "2"});
  EXPECT_EQ(error_of(j), "times_us[1]: expected a number");
  j = good();
  j["times_us"] = json::array({-1.0});
  EXPECT_EQ(error_of(j), "times_us[0]: expected a finite time >= 0");
  j = good();
  j["median_us"] = nullptr;
  EXPECT_EQ(error_of(j), "median_us: missing for 3 times");
  j = good();
  j["times_us"] = json::array();
  EXPECT_EQ(error_of(j), "median_us: expected null when times_us is empty");
  j = good();
  j["source_sha256"] = "ABC";
  EXPECT_EQ(error_of(j), "source_sha256: expected 64 lowercase hex digits");
  j = good();
  j["timestamp"] = "yesterday";
  EXPECT_EQ(error_of(j), "timestamp: expected ISO 8601 (\"2025-01-31T12:00:00Z\"), got 'yesterday'");
}

}  // namespace
}  // namespace comfuse::search
