// Running this test binary again in a fresh process, to check that a value is the same across processes.
#pragma once

#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

namespace comfuse::testing_support {

/// Runs /proc/self/exe with `variable`=1 in its environment and `--gtest_filter=<test>`, and returns what
/// that run prints after `marker` up to the end of its line (or a message starting with '<' when it printed
/// none).
inline std::string value_from_fresh_process(const std::string& variable, const std::string& test,
                                            const std::string& marker) {
  std::array<char, 4096> exe{};
  const ssize_t length = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  if (length <= 0) return "<readlink failed>";
  std::string quoted = "'";
  for (char c : std::string(exe.data(), static_cast<std::size_t>(length)))
    quoted += c == '\'' ? "'\\''" : std::string(1, c);
  quoted += "'";
  const std::string command = variable + "=1 " + quoted + " --gtest_filter=" + test + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "<popen failed>";
  std::string output;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) output += buffer.data();
  pclose(pipe);
  const auto at = output.find(marker);
  if (at == std::string::npos) return "<nothing printed after '" + marker + "'>\n" + output;
  return output.substr(at + marker.size(), output.find('\n', at) - at - marker.size());
}

}  // namespace comfuse::testing_support
