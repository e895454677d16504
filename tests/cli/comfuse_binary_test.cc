// The installed command itself: exit codes and the no-GPU path of `comfuse devices`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct CommandResult {
  int code;
  std::string output;
};

CommandResult run(const std::string& args) {
  const std::string command = std::string(COMFUSE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(ComfuseBinary, ShowListSucceeds) {
  const CommandResult r = run("show --list");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("gemm_softcap_softmax"), std::string::npos);
}

TEST(ComfuseBinary, UnknownCommandAndWorkloadAreExitCode2) {
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("show not_a_workload").code, 2);
}

TEST(ComfuseBinary, DevicesWithoutGpuIsExitCode3) {
  const CommandResult r = run("devices");
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is present: " << r.output;
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("no CUDA device: "), std::string::npos) << r.output;
}

}  // namespace
