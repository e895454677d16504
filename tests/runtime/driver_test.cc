// The driver loader without a GPU: clean "no CUDA device" errors, and no binary that needs libcuda.
#include "runtime/driver.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "runtime/elf_reader.h"

namespace comfuse::runtime {
namespace {

TEST(Driver, AMissingLibraryIsNoCudaDevice) {
  try {
    Driver driver("libcomfuse-no-such-driver.so.1");
    FAIL() << "loaded a library that does not exist";
  } catch (const NoCudaDeviceError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(message.starts_with("no CUDA device: cannot load libcomfuse-no-such-driver.so.1 ("))
        << message;
    EXPECT_EQ(error.api(), "dlopen");
    EXPECT_EQ(error.code(), -1);
    EXPECT_EQ("no CUDA device: " + error.reason(), message);
  }
}

TEST(Driver, ALibraryWithoutTheDriverApiIsNoCudaDevice) {
  try {
    Driver driver("libc.so.6");
    FAIL() << "took libc for a driver";
  } catch (const NoCudaDeviceError& error) {
    EXPECT_EQ(
        std::string(error.what()),
        "no CUDA device: libc.so.6 has no cuGetProcAddress_v2 (a driver for CUDA 12.0 or newer is needed)");
  }
}

TEST(Driver, NoCudaDeviceIsARuntimeError) {
  EXPECT_THROW(Driver("libcomfuse-no-such-driver.so.1"), RuntimeError);
}

TEST(Driver, TheDefaultDriverLoadsOrSaysWhy) {
  try {
    const Driver& driver = Driver::get();
    EXPECT_GE(driver.version(), CUDA_VERSION);
    EXPECT_GE(driver.device_count(), 0);
  } catch (const NoCudaDeviceError& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with("no CUDA device: ")) << error.what();
    // Asking again fails the same way instead of crashing.
    EXPECT_THROW(Driver::get(), NoCudaDeviceError);
  }
}

TEST(Driver, CudaVersionStrings) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12080), "12.8");
  EXPECT_EQ(cuda_version_string(CUDA_VERSION),
            std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10));
}

std::string read_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Neither this binary nor any library it has mapped may need libcuda at load time: libcuda comes only
// through dlopen, which is what lets comfuse start on machines without a GPU.
TEST(Driver, NoLoadedObjectNeedsLibcuda) {
  std::set<std::string> objects = {"/proc/self/exe"};
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(".so") != std::string::npos && path.find("libcuda.so") == std::string::npos)
      objects.insert(path);
  }
  std::set<std::string> needed_by_exe;
  for (const std::string& object : objects) {
    const std::string image = read_binary(object);
    if (!is_elf(image)) continue;
    for (const std::string& needed : read_needed_libraries(image)) {
      EXPECT_FALSE(needed.starts_with("libcuda.so")) << object << " needs " << needed;
      if (object == "/proc/self/exe") needed_by_exe.insert(needed);
    }
  }
  // NVRTC and CUPTI are linked directly; the check above covers their own dependencies too.
  EXPECT_TRUE(needed_by_exe.contains("libnvrtc.so.13")) << "libnvrtc is linked";
  EXPECT_TRUE(needed_by_exe.contains("libcupti.so.13")) << "libcupti is linked";
}

}  // namespace
}  // namespace comfuse::runtime
