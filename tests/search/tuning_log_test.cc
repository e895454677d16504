// Tuning log: concurrent appends from two processes, and loading thousands of malformed lines.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "search/tuning_log.h"
#include "search_fixture.h"
#include "support/error.h"

namespace comfuse::search {
namespace {

std::string temp_path(const std::string& name) {
  const auto path =
      std::filesystem::temp_directory_path() / ("comfuse_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove(path);
  return path.string();
}

TEST(TuningLog, TwoProcessesAppendWholeLines) {
  const std::string path = temp_path("concurrent.jsonl");
  const TuningLog log(path);
  std::vector<pid_t> children;
  for (int child = 0; child < 2; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      TuningRecord record = make_record(1.0 + child);
      for (int i = 0; i < 200; ++i) log.append(record);
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const LoadResult result = TuningLog::load(path, true);
  EXPECT_EQ(result.records.size(), 400u);
  EXPECT_TRUE(result.problems.empty());
  std::filesystem::remove(path);
}

// Malformed variants of a valid line.
std::vector<std::string> mutations(const std::string& line) {
  std::vector<std::string> bad;
  for (std::size_t n = 7; n < line.size(); n += 7) bad.push_back(line.substr(0, n));
  // Flips of structural bytes (inside strings a flip may leave a valid record).
  for (std::size_t at = 0; at < line.size(); ++at) {
    if (std::string("{}[]:,").find(line[at]) == std::string::npos) continue;
    std::string flipped = line;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    bad.push_back(flipped);
  }
  const nlohmann::json good = nlohmann::json::parse(line);
  for (const auto& [key, value] : good.items()) {
    nlohmann::json deleted = good;
    deleted.erase(key);
    bad.push_back(deleted.dump());
    nlohmann::json swapped = good;
    swapped[key] = value.is_string() ? nlohmann::json(42) : nlohmann::json("text");
    bad.push_back(swapped.dump());
  }
  for (const std::string number : {"1e999", "99999999999999999999", "-1e999"}) {
    std::string huge = line;
    huge.replace(huge.find("\"v\":1"), 5, "\"v\":" + number);
    bad.push_back(huge);
    // 1e20 is a legal (if absurd) time; only the overflowing literals make a time invalid.
    if (number == std::string("99999999999999999999")) continue;
    nlohmann::json times = good;
    bad.push_back(times.dump().replace(times.dump().find("\"times_us\":[") + 12, 0, number + ","));
  }
  for (const std::string bytes : {"\xff", "\xc3\x28", "\xed\xa0\x80", "\xe2\x82"}) {
    std::string utf = line;
    utf.insert(
        utf.find("it failed") == std::string::npos ? utf.find("\"error\":\"") + 9 : utf.find("it failed"),
        bytes);
    bad.push_back(utf);
  }
  bad.push_back(std::string(10000, '[') + std::string(10000, ']'));
  bad.push_back("{\"error\":" + std::string(10000, '[') + std::string(10000, ']') + "}");
  bad.push_back("");
  return bad;
}

TEST(TuningLog, EveryMalformedLineIsReportedWithFileAndLine) {
  const std::string good = record_to_json(make_record(3)).dump();
  std::vector<std::string> bad;
  for (int round = 0; round < 3; ++round) {
    for (auto& line : mutations(good)) bad.push_back(line);
  }
  ASSERT_GE(bad.size(), 1000u);
  const std::string path = temp_path("malformed.jsonl");
  std::vector<std::size_t> bad_lines;
  {
    std::ofstream out(path, std::ios::binary);
    std::size_t number = 0;
    for (std::size_t i = 0; i < bad.size(); ++i) {
      out << good << '\n';
      ++number;
      out << bad[i] << '\n';
      bad_lines.push_back(++number);
    }
    out << good << '\n' << good.substr(0, 50);  // a truncated last line
    bad_lines.push_back(number + 2);
  }
  const LoadResult result = TuningLog::load(path, false);
  EXPECT_EQ(result.records.size(), bad.size() + 1);
  ASSERT_EQ(result.problems.size(), bad_lines.size());
  for (std::size_t i = 0; i < bad_lines.size(); ++i) {
    const std::string prefix = path + ":" + std::to_string(bad_lines[i]) + ": ";
    EXPECT_EQ(result.problems[i].substr(0, prefix.size()), prefix) << result.problems[i];
  }
  try {
    TuningLog::load(path, true);
    ADD_FAILURE() << "strict load accepted a malformed log";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), result.problems[0]);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace comfuse::search
