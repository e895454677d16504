// Error types carry what their users need: the API, its code and the log.
#include "support/error.h"

#include <gtest/gtest.h>

namespace comfuse {
namespace {

TEST(RuntimeError, CarriesApiCodeAndLog) {
  RuntimeError error("nvrtcCompileProgram", 6, "compilation failed", "kernel.cu(3): error: expected a ';'");
  EXPECT_EQ(error.api(), "nvrtcCompileProgram");
  EXPECT_EQ(error.code(), 6);
  EXPECT_EQ(
      std::string(error.what()),
      "nvrtcCompileProgram failed with code 6: compilation failed\nkernel.cu(3): error: expected a ';'");
}

TEST(InternalCheck, ThrowsInternalErrorWithLocation) {
  try {
    COMFUSE_CHECK(1 + 1 == 3, "arithmetic is broken");
    FAIL() << "COMFUSE_CHECK did not throw";
  } catch (const InternalError& error) {
    EXPECT_NE(std::string(error.what()).find("arithmetic is broken"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("error_test.cc"), std::string::npos);
  }
}

}  // namespace
}  // namespace comfuse
