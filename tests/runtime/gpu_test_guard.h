// GoogleTest guard for GPU tests: skip without a device, fail instead when COMFUSE_REQUIRE_GPU=1.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/context.h"
#include "runtime/driver.h"

namespace comfuse::gpu_test {

/// Why no GPU test can run here ("no CUDA device: <reason>"), or nullopt when device 0 is usable.
inline std::optional<std::string> gpu_unavailable_reason() {
  try {
    if (runtime::Driver::get().device_count() > 0) return std::nullopt;
    return std::string("no CUDA device: the driver reports 0 devices");
  } catch (const runtime::NoCudaDeviceError& error) {
    return std::string(error.what());
  }
}

/// True when COMFUSE_REQUIRE_GPU=1: a missing device is then a failure, not a skip.
inline bool gpu_required() {
  const char* value = std::getenv("COMFUSE_REQUIRE_GPU");
  return value != nullptr && std::string(value) == "1";
}

/// A fixture whose tests run with device 0's primary context current in `context()`; they are skipped without
/// a device, or fail when COMFUSE_REQUIRE_GPU=1.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::optional<std::string> reason = gpu_unavailable_reason()) {
      if (gpu_required()) FAIL() << "COMFUSE_REQUIRE_GPU=1 but " << *reason;
      GTEST_SKIP() << *reason;
    }
    context_.emplace(0);
  }

  const runtime::Context& context() const { return *context_; }

 private:
  std::optional<runtime::Context> context_;
};

}  // namespace comfuse::gpu_test

/// For GPU tests that do not use GpuTest: skips the test without a device, or fails it when
/// COMFUSE_REQUIRE_GPU=1. Use at the top of the test body.
#define COMFUSE_GPU_TEST_GUARD()                                                                          \
  do {                                                                                                    \
    if (std::optional<std::string> comfuse_reason = ::comfuse::gpu_test::gpu_unavailable_reason()) {      \
      if (::comfuse::gpu_test::gpu_required()) FAIL() << "COMFUSE_REQUIRE_GPU=1 but " << *comfuse_reason; \
      GTEST_SKIP() << *comfuse_reason;                                                                    \
    }                                                                                                     \
  } while (false)
