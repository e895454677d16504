// `comfuse show`: the list, one workload, Graphviz output, and the errors with exit code 2.
#include "cli/show_command.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "te/workloads.h"

namespace comfuse::cli {
namespace {

struct Result {
  int code;
  std::string out, err;
};

Result show(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_show(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(ShowCommand, ListHasOneLinePerWorkloadNameFirst) {
  const Result r = show({"--list"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::size_t count = 0;
  for (; std::getline(lines, line); ++count) {
    ASSERT_LT(count, te::workloads().size());
    EXPECT_EQ(line.rfind(te::workloads()[count].name + " ", 0), 0u) << line;
  }
  EXPECT_EQ(count, te::workloads().size());
  EXPECT_NE(r.out.find("post_layernorm M=16384,K=1024,N=1024"), std::string::npos) << r.out;
}

TEST(ShowCommand, ShowsProgramGraphAndKey) {
  const Result r = show({"post_layernorm", "--shape", "M=64,K=32,N=128"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("key sha256:"), std::string::npos);
  EXPECT_NE(r.out.find("bf16[64, 128]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("op graph (topological order):"), std::string::npos);
  EXPECT_NE(r.out.find("(input)"), std::string::npos);
}

TEST(ShowCommand, KeyDependsOnShape) {
  const Result a = show({"gemm", "--shape", "M=64,K=32,N=128"});
  const Result b = show({"gemm", "--shape", "M=64,K=32,N=256"});
  ASSERT_EQ(a.code, 0);
  ASSERT_EQ(b.code, 0);
  auto key = [](const std::string& text) { return text.substr(text.find("key "), 75); };
  EXPECT_NE(key(a.out), key(b.out));
  EXPECT_EQ(key(a.out), key(show({"gemm", "--shape", "N=128,M=64,K=32"}).out));
}

TEST(ShowCommand, WritesGraphviz) {
  const auto path =
      std::filesystem::temp_directory_path() / ("comfuse_show_" + std::to_string(::getpid()) + ".dot");
  const Result r = show({"gemm_softmax", "--shape", "M=8,K=16,N=32", "--dot", path.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream dot(path);
  std::stringstream text;
  text << dot.rdbuf();
  EXPECT_EQ(text.str().rfind("digraph", 0), 0u) << text.str();
  std::filesystem::remove(path);
}

TEST(ShowCommand, UnknownWorkloadListsValidNames) {
  const Result r = show({"post_layernrom"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("post_layernrom"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("post_layernorm"), std::string::npos) << r.err;
}

TEST(ShowCommand, BadShapeIsExitCode2) {
  EXPECT_EQ(show({"gemm", "--shape", "M=abc"}).code, 2);
  EXPECT_EQ(show({"gemm", "--shape", "Q=4"}).code, 2);
  EXPECT_EQ(show({"gemm", "--shape", "M=0"}).code, 2);
  EXPECT_EQ(show({"gemm", "--frobnicate"}).code, 2);
  EXPECT_EQ(show({}).code, 2);
}

}  // namespace
}  // namespace comfuse::cli
