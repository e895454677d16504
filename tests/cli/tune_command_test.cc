// `comfuse tune` on the CPU: its usage errors word for word, and exit code 3 when there is no GPU.
#include "cli/tune_command.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "runtime/driver.h"
#include "support/error.h"

namespace comfuse::cli {
namespace {

struct TuneRun {
  int code;
  std::string out, err;
};

TuneRun tune(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_tune(args, out, err);
  return {code, out.str(), err.str()};
}

// The first line of `text` (the usage follows a usage error's message).
std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

bool gpu_expected() {
  if (const char* require = std::getenv("COMFUSE_REQUIRE_GPU");
      require != nullptr && std::string(require) == "1") {
    return true;
  }
  try {
    return runtime::Driver::get().device_count() > 0;
  } catch (const runtime::NoCudaDeviceError&) {
    return false;
  }
}

TEST(TuneCommand, UnknownFlagIsAUsageError) {
  const TuneRun run = tune({"gemm", "--trails", "4"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(first_line(run.err), "comfuse tune: unexpected argument '--trails'");
  EXPECT_NE(run.err.find("usage: comfuse tune WORKLOAD"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(TuneCommand, MissingWorkloadIsAUsageError) {
  EXPECT_EQ(first_line(tune({"--trials", "3"}).err), "comfuse tune: no workload given");
}

TEST(TuneCommand, TrialsAndSecondsAreExclusive) {
  const TuneRun run = tune({"gemm", "--trials", "10", "--seconds", "60"});
  EXPECT_EQ(run.code, 2);
  EXPECT_EQ(first_line(run.err), "comfuse tune: --trials and --seconds cannot be used together");
}

TEST(TuneCommand, BadNumbersNameTheFlag) {
  EXPECT_EQ(first_line(tune({"gemm", "--trials", "0"}).err),
            "comfuse tune: --trials: expected an integer of at least 1, got '0'");
  EXPECT_EQ(first_line(tune({"gemm", "--repeats", "7x"}).err),
            "comfuse tune: --repeats: expected an integer of at least 1, got '7x'");
  EXPECT_EQ(first_line(tune({"gemm", "--seconds", "nan"}).err),
            "comfuse tune: --seconds: expected a positive number of seconds, got 'nan'");
  EXPECT_EQ(first_line(tune({"gemm", "--timeout", "-1"}).err),
            "comfuse tune: --timeout: expected a positive number of seconds, got '-1'");
}

TEST(TuneCommand, BadFaultItemsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"boom@1", "'boom@1': unknown fault 'boom' (oob_write, trap, hang)"},
      {"trap", "'trap': expected KIND@ORDINAL"},
      {"trap@x", "'trap@x': ordinal 'x' is not a non-negative integer"},
      {"hang@-1", "'hang@-1': ordinal '-1' is not a non-negative integer"},
      {"trap@1,", "'': expected KIND@ORDINAL"},
      {"trap@2,hang@2", "'hang@2': candidate 2 already has a fault"},
  };
  for (const auto& [spec, message] : cases) {
    const TuneRun run = tune({"gemm", "--inject-faults", spec});
    EXPECT_EQ(run.code, 2) << spec;
    EXPECT_EQ(first_line(run.err), "comfuse tune: --inject-faults: " + message);
  }
}

TEST(TuneCommand, FaultSpecParsesEveryKind) {
  const std::map<int, search::Fault> faults = parse_fault_spec("oob_write@0,trap@3,hang@12");
  const std::map<int, search::Fault> expected = {
      {0, search::Fault::kOutOfBoundsWrite}, {3, search::Fault::kTrap}, {12, search::Fault::kHang}};
  EXPECT_EQ(faults, expected);
}

TEST(TuneCommand, AStartLogThatDoesNotLoadStopsTheRunBeforeItStarts) {
  const TuneRun run = tune({"post_layernorm", "--trials", "2", "--start-log", "/nonexistent/start.jsonl"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("/nonexistent/start.jsonl"), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
}

TEST(TuneCommand, UnknownWorkloadListsTheValidOnes) {
  const TuneRun run = tune({"gemm_relu_typo", "--trials", "2"});
  EXPECT_EQ(run.code, 2);
  EXPECT_TRUE(run.err.starts_with("comfuse tune: unknown workload 'gemm_relu_typo'; valid workloads: gemm, "))
      << run.err;
}

TEST(TuneCommand, UnfusableWorkloadIsExitCode2) {
  // D=72: no two-kernel plan (batched), and the fused kernel reads V in boxes of 64 columns.
  const TuneRun run = tune({"attention", "--shape", "BH=2,L=64,D=72"});
  EXPECT_EQ(run.code, 2);
  EXPECT_NE(run.err.find("batched contraction"), std::string::npos) << run.err;
  // The split's first part fails for the same reason: said once.
  EXPECT_NE(run.err.find("; as two kernels: the same, in its first part"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("; fused back-to-back kernel: 'V' is [K, O] with O=72"), std::string::npos)
      << run.err;
}

TEST(TuneCommand, BackToBackWorkloadIsTunedAsTwoKernelsAndAsTheFusedKernel) {
  if (gpu_expected()) GTEST_SKIP() << "a GPU is present: this test is for machines without one";
  const TuneRun run = tune({"mlp_relu", "--shape", "M=64,K=64,N=64,O=64"});
  EXPECT_EQ(run.code, 3);  // planned as two parts and the fused kernel, then no GPU to measure the first
  EXPECT_NE(run.out.find("== part 1 of 3: GEMM1 with the tiles between"), std::string::npos) << run.out;
}

TEST(TuneCommand, AttentionIsTunedAsTheFusedKernel) {
  if (gpu_expected()) GTEST_SKIP() << "a GPU is present: this test is for machines without one";
  const TuneRun run = tune({"attention", "--shape", "BH=2,L=64,D=64,CAUSAL=1"});
  EXPECT_EQ(run.code, 3) << run.err;  // planned (no two-kernel plan), then no GPU
  EXPECT_TRUE(run.err.starts_with("comfuse tune: no GPU: ")) << run.err;
}

TEST(TuneCommand, NoGpuIsExitCode3) {
  if (gpu_expected()) GTEST_SKIP() << "a GPU is present: this test is for machines without one";
  const TuneRun run = tune({"post_layernorm", "--shape", "M=128,K=64,N=128", "--trials", "2"});
  EXPECT_EQ(run.code, 3) << run.err;
  EXPECT_TRUE(run.err.starts_with("comfuse tune: no GPU: no CUDA device")) << run.err;
  EXPECT_EQ(run.out, "");
}

}  // namespace
}  // namespace comfuse::cli
