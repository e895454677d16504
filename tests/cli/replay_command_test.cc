// `comfuse replay` from a tuning log written the way the tuner writes it: the logged kernel comes back byte
// for byte, target mismatches and malformed lines are reported, all without a GPU.
#include "cli/replay_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/kernel_source.h"
#include "comfuse/version.h"
#include "runtime/driver.h"
#include "runtime/nvrtc_compiler.h"
#include "schedule/fusion_plan.h"
#include "search/search_fixture.h"
#include "search/tuning_log.h"
#include "support/sha256.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

namespace fs = std::filesystem;

const te::Shape kShape = {{"M", 256}, {"K", 128}, {"N", 256}};
constexpr const char* kShapeText = "M=256,K=128,N=256";

// The fingerprint an H200 with this machine's toolkit reports.
runtime::DeviceFingerprint h200() {
  runtime::DeviceFingerprint f = search::h200();
  f.cuda = runtime::cuda_version_string(CUDA_VERSION);
  f.nvrtc = runtime::nvrtc_version();
  return f;
}

// An ok record of post_layernorm at kShape, as the tuner makes one.
search::TuningRecord make_record(double median_us, int raster_group_m = 8) {
  te::Program program = te::build_workload("post_layernorm", kShape);
  const std::string key = te::workload_key(program);
  search::TuningRecord r(search::Workload{key, std::move(program)});
  r.target = h200();
  r.compiler = {kVersion, runtime::nvrtc_options({})};
  const schedule::FusionPlan plan = schedule::plan_fusion(r.workload.program);
  r.schedule = schedule::default_schedule(plan);
  r.schedule.raster_group_m = raster_group_m;
  r.times_us = {median_us, median_us + 0.5, median_us - 0.25};
  r.median_us = median_us;
  r.source_sha256 = sha256_hex(codegen::emit_kernel(plan, r.schedule, key).source);
  r.timestamp = "2026-01-31T12:00:00Z";
  return r;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool have_gpu() {
  try {
    return runtime::Driver::get().device_count() > 0;
  } catch (const runtime::NoCudaDeviceError&) {
    return false;
  }
}

class ReplayCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("comfuse_replay_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    log_ = (dir_ / "tuning.jsonl").string();
    out_dir_ = (dir_ / "out").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void append(const search::TuningRecord& record) { search::TuningLog(log_).append(record); }

  // `replay --log LOG post_layernorm --shape kShape -o OUT` plus `extra`.
  int replay(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--log", log_, "post_layernorm", "--shape", kShapeText, "-o", out_dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    std::ostringstream out, err;
    const int code = run_replay(args, out, err);
    out_ = out.str();
    err_ = err.str();
    return code;
  }

  fs::path dir_;
  std::string log_, out_dir_, out_, err_;
};

TEST_F(ReplayCommand, BackToBackWorkloadTakesThePlanTheRecordsFavour) {
  const std::string shipped = std::string(COMFUSE_SOURCE_DIR) + "/tuning_logs/h200.jsonl";
  auto count_written = [](const std::string& text) {
    std::size_t written = 0;
    for (std::size_t at = text.find("wrote "); at != std::string::npos; at = text.find("wrote ", at + 1))
      ++written;
    return written;
  };
  // The shipped log holds the small suite MLP's two kernels and its fused kernel, which measured faster.
  std::ostringstream out, err;
  ASSERT_EQ(run_replay({"--log", shipped, "mlp_relu", "--target", "NVIDIA H200", "-o", out_dir_}, out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("plan       fused kernel: "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(" fused against "), std::string::npos) << out.str();
  EXPECT_EQ(count_written(out.str()), 1u) << out.str();
  // The large MLP (O=1024) has no fused kernel: the guard keeps the two kernels and says why.
  std::ostringstream large_out, large_err;
  ASSERT_EQ(run_replay({"--log", shipped, "mlp_relu", "--shape", "M=16384,K=1024,N=4096,O=1024", "--target",
                        "NVIDIA H200", "-o", out_dir_},
                       large_out, large_err),
            0)
      << large_err.str();
  EXPECT_NE(large_out.str().find("plan       two kernels "), std::string::npos) << large_out.str();
  EXPECT_NE(large_out.str().find("(fused kernel: fused back-to-back kernel: GEMM2 has O=1024 columns"),
            std::string::npos)
      << large_out.str();
  EXPECT_EQ(count_written(large_out.str()), 2u) << large_out.str();
}

TEST_F(ReplayCommand, WritesTheFastestLoggedKernel) {
  const search::TuningRecord slow = make_record(20), fast = make_record(5, 1);
  append(slow);
  append(fast);
  ASSERT_EQ(replay({"--target", "NVIDIA H200"}), 0) << err_;
  EXPECT_EQ(err_, "");
  const schedule::FusionPlan plan = schedule::plan_fusion(fast.workload.program);
  const std::string name = codegen::emit_kernel(plan, fast.schedule, fast.workload.key).name;
  const fs::path source = fs::path(out_dir_) / (name + ".cu"), cubin = fs::path(out_dir_) / (name + ".cubin");
  ASSERT_TRUE(fs::exists(source)) << out_;
  ASSERT_TRUE(fs::exists(cubin)) << out_;
  EXPECT_EQ(sha256_hex(read_bytes(source)), fast.source_sha256);
  EXPECT_NE(fast.source_sha256, slow.source_sha256);
  EXPECT_TRUE(
      read_bytes(cubin).starts_with("\x7f"
                                    "ELF"));
  EXPECT_NE(out_.find("'NVIDIA H200' as recorded in the log (--target)"), std::string::npos) << out_;
  EXPECT_NE(out_.find("median     5.0 us (3 samples)"), std::string::npos) << out_;
  EXPECT_NE(out_.find("sha256 " + fast.source_sha256), std::string::npos) << out_;
  // What ptxas gave the kernel, as the emit command reports it: registers and spills.
  EXPECT_NE(out_.find("resources  " + name + ": "), std::string::npos) << out_;
  EXPECT_NE(out_.find(" bytes spill stores, "), std::string::npos) << out_;
  EXPECT_EQ(out_.find(": -1 registers"), std::string::npos) << out_;  // -1: ptxas's report was not read
}

TEST_F(ReplayCommand, OtherNvrtcIsRefusedUnlessAllowed) {
  search::TuningRecord record = make_record(5);
  record.target.nvrtc = "12.0.76";
  append(record);
  EXPECT_EQ(replay({"--target", "NVIDIA H200"}), 2);
  EXPECT_EQ(err_, "comfuse replay: target.nvrtc differs: log has '12.0.76', this machine is '" +
                      runtime::nvrtc_version() + "'\n");
  EXPECT_FALSE(fs::exists(out_dir_));
  EXPECT_EQ(replay({"--target", "NVIDIA H200", "--allow-target-mismatch"}), 0) << err_;
  EXPECT_TRUE(fs::exists(out_dir_));
}

TEST_F(ReplayCommand, UnknownTargetListsTheNamesInTheLog) {
  search::TuningRecord b200 = make_record(4);
  b200.target.name = "NVIDIA B200";
  append(make_record(5));
  append(b200);
  EXPECT_EQ(replay({"--target", "NVIDIA H100"}), 2);
  const std::string key = make_record(5).workload.key;
  EXPECT_EQ(err_,
            "comfuse replay: no record for target 'NVIDIA H100' and workload " + key +
                " in the tuning log; targets in the log for this workload: 'NVIDIA B200', 'NVIDIA H200'\n");
}

TEST_F(ReplayCommand, MalformedLineIsAWarningUnlessStrict) {
  append(make_record(5));
  std::ofstream(log_, std::ios::app) << "{\"v\":1,\"workload\":\n";
  ASSERT_EQ(replay({"--target", "NVIDIA H200"}), 0) << err_;
  EXPECT_TRUE(err_.starts_with("comfuse replay: warning: " + log_ + ":2: ")) << err_;
  EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;

  fs::remove_all(out_dir_);
  EXPECT_EQ(replay({"--target", "NVIDIA H200", "--strict"}), 2);
  EXPECT_TRUE(err_.starts_with("comfuse replay: " + log_ + ":2: ")) << err_;
  EXPECT_FALSE(fs::exists(out_dir_));
}

TEST_F(ReplayCommand, WithoutGpuOrTargetTheH200OfTheLogIsUsed) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present: the local fingerprint is the target";
  append(make_record(5));
  ASSERT_EQ(replay({}), 0) << err_;
  EXPECT_NE(out_.find("'NVIDIA H200' as recorded in the log (no local GPU: "), std::string::npos) << out_;
}

TEST_F(ReplayCommand, NoRecordForTheShapeIsExitCode2) {
  append(make_record(5));
  std::ostringstream out, err;
  EXPECT_EQ(run_replay({"--log", log_, "post_layernorm", "--shape", "M=512,K=128,N=256", "--target",
                        "NVIDIA H200", "-o", out_dir_},
                       out, err),
            2);
  EXPECT_NE(err.str().find("no record for target 'NVIDIA H200' and workload sha256:"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("targets in the log for this workload: none"), std::string::npos) << err.str();
}

TEST_F(ReplayCommand, MissingArgumentsAreAUsageError) {
  std::ostringstream out, err;
  EXPECT_EQ(run_replay({"post_layernorm", "-o", out_dir_}, out, err), 2);
  EXPECT_TRUE(err.str().starts_with("comfuse replay: --log FILE, WORKLOAD and -o DIR are required\n"))
      << err.str();
  EXPECT_EQ(run_replay({"--log", log_, "post_layernorm", "-o", out_dir_, "--bogus"}, out, err), 2);
  EXPECT_NE(err.str().find("unexpected argument '--bogus'"), std::string::npos);
}

}  // namespace
}  // namespace comfuse::cli
