// `comfuse emit` writes readable source carrying its schedule, and a cubin, without a GPU.
#include "cli/emit_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace comfuse::cli {
namespace {

namespace fs = std::filesystem;

TEST(EmitCommand, WritesSourceAndCubin) {
  const fs::path dir = fs::temp_directory_path() / ("comfuse_emit_" + std::to_string(::getpid()));
  std::ostringstream out, err;
  const int code = run_emit({"post_rmsnorm", "--shape", "M=100,K=64,N=300", "-o", dir.string()}, out, err);
  ASSERT_EQ(code, 0) << err.str();
  std::size_t sources = 0, cubins = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".cu") {
      ++sources;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_NE(text.str().find("// schedule: {"), std::string::npos);
      EXPECT_NE(text.str().find("// workload: sha256:"), std::string::npos);
    }
    if (entry.path().extension() == ".cubin") {
      ++cubins;
      std::ifstream in(entry.path(), std::ios::binary);
      char magic[4] = {};
      in.read(magic, 4);
      EXPECT_EQ(std::string(magic, 4),
                "\x7f"
                "ELF");
    }
  }
  EXPECT_EQ(sources, 1u);
  EXPECT_EQ(cubins, 1u);
  EXPECT_NE(out.str().find("wrote "), std::string::npos);
  fs::remove_all(dir);
}

// A persistent grid's launch line says what its grid counts: tiles, or row blocks when rows are reduced.
TEST(EmitCommand, PersistentLaunchSaysWhatTheGridCounts) {
  const fs::path dir = fs::temp_directory_path() / ("comfuse_emit_grid_" + std::to_string(::getpid()));
  const fs::path file = dir / "schedule.json";
  fs::create_directories(dir);
  auto launch_line = [&](const std::string& workload, const std::string& schedule) {
    std::ofstream(file) << schedule;
    std::ostringstream out, err;
    EXPECT_EQ(
        run_emit({workload, "--shape", "M=640,K=64,N=256", "--schedule", file.string(), "-o", dir.string()},
                 out, err),
        0)
        << err.str();
    const std::string text = out.str();
    const std::size_t line = text.find("launch grid");  // up to the block size
    return line == std::string::npos ? text : text.substr(line, text.find(" block ", line) - line);
  };
  const std::string common =
      R"("bk":64,"bm":128,"bn":128,"stages":4,"warp_roles":"cooperative","raster_group_m":8,"persistent":true)";
  EXPECT_EQ(launch_line("gemm", "{" + common + R"(,"cluster_n":1,"reduction":"cta","carried":"registers"})"),
            "launch grid 10 tiles (persistent: 1 CTA per SM at most)");
  EXPECT_EQ(
      launch_line("post_rmsnorm", "{" + common + R"(,"cluster_n":1,"reduction":"cta","carried":"l2_stash"})"),
      "launch grid 5 row blocks (persistent: 1 CTA per SM at most, walking the row blocks)");
  fs::remove_all(dir);
}

TEST(EmitCommand, IllegalScheduleIsExitCode2WithTheReason) {
  const fs::path file =
      fs::temp_directory_path() / ("comfuse_schedule_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << R"({"bm":128,"bn":200,"bk":64,"stages":4,"cluster_n":1,"warp_roles":"cooperative",)"
                      << R"("reduction":"cta","carried":"l2_stash","raster_group_m":8})";
  std::ostringstream out, err;
  EXPECT_EQ(
      run_emit({"gemm", "--shape", "M=64,K=64,N=400", "--schedule", file.string(), "-o", "/tmp/x"}, out, err),
      2);
  EXPECT_NE(err.str().find("BN=200 is not a multiple of 16"), std::string::npos) << err.str();
  fs::remove(file);
}

TEST(EmitCommand, UnfusableWorkloadIsExitCode2) {
  std::ostringstream out, err;
  EXPECT_EQ(run_emit({"mlp_relu", "--shape", "M=64,K=64,N=64,O=64", "-o", "/tmp/x"}, out, err), 2);
  EXPECT_NE(err.str().find("back-to-back"), std::string::npos) << err.str();
}

TEST(EmitCommand, FusedBackToBackKernelOnRequest) {
  const fs::path dir = fs::temp_directory_path() / ("comfuse_emit_b2b_" + std::to_string(::getpid()));
  std::ostringstream out, err;
  ASSERT_EQ(run_emit({"attention", "--shape", "BH=2,L=100,D=64,CAUSAL=1", "--fused-b2b", "--stages", "3",
                      "--bm", "64", "--bn1", "128", "-o", dir.string()},
                     out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("fused back-to-back kernel, b2b bm=64 bn1=128 stages=3\n"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("0 bytes spilled"), std::string::npos) << out.str();
  fs::remove_all(dir);
  // What the fused kernel does not take is the usual exit code 2 with the reason.
  std::ostringstream out2, err2;
  EXPECT_EQ(run_emit({"mlp_relu", "--shape", "M=64,K=64,N=64,O=1024", "--fused-b2b", "-o", dir.string()},
                     out2, err2),
            2);
  EXPECT_NE(err2.str().find("GEMM2 has O=1024 columns"), std::string::npos) << err2.str();
  std::ostringstream out3, err3;
  EXPECT_EQ(run_emit({"mlp_relu", "--fused-b2b", "--stages", "three", "-o", dir.string()}, out3, err3), 2);
  EXPECT_NE(err3.str().find("--stages takes an integer, not 'three'"), std::string::npos) << err3.str();
  std::ostringstream out4, err4;
  EXPECT_EQ(run_emit({"mlp_relu", "--fused-b2b", "--bn1", "96", "-o", dir.string()}, out4, err4), 2);
  EXPECT_NE(err4.str().find("bn1=96 is not 64 or 128"), std::string::npos) << err4.str();
  // The two-valued knobs: their values, and a bad one named.
  std::ostringstream out5, err5;
  ASSERT_EQ(run_emit({"mlp_relu", "--shape", "M=256,K=128,N=256,O=128", "--fused-b2b", "--persistent",
                      "--operand", "shared", "--store", "tma", "-o", dir.string()},
                     out5, err5),
            0)
      << err5.str();
  EXPECT_NE(out5.str().find("b2b bm=128 bn1=64 stages=4 persistent operand=shared store=tma\n"),
            std::string::npos)
      << out5.str();
  fs::remove_all(dir);
  std::ostringstream out6, err6;
  EXPECT_EQ(run_emit({"mlp_relu", "--fused-b2b", "--store", "async", "-o", dir.string()}, out6, err6), 2);
  EXPECT_NE(err6.str().find("--store takes direct or tma, not 'async'"), std::string::npos) << err6.str();
  std::ostringstream out7, err7;
  EXPECT_EQ(run_emit({"mlp_relu", "--fused-b2b", "--operand", "global", "-o", dir.string()}, out7, err7), 2);
  EXPECT_NE(err7.str().find("--operand takes registers or shared, not 'global'"), std::string::npos)
      << err7.str();
  // --schedule is for single-GEMM kernels; the refusal lists every knob the fused kernel takes.
  std::ostringstream out8, err8;
  EXPECT_EQ(run_emit({"mlp_relu", "--fused-b2b", "--schedule", "s.json", "-o", dir.string()}, out8, err8), 2);
  EXPECT_NE(err8.str().find("--persistent, --operand and --store"), std::string::npos) << err8.str();
}

TEST(EmitCommand, UnknownTargetIsRefused) {
  std::ostringstream out, err;
  EXPECT_EQ(run_emit({"gemm", "--target", "sm_80", "-o", "/tmp/x"}, out, err), 2);
  EXPECT_NE(err.str().find("sm_90a"), std::string::npos);
}

}  // namespace
}  // namespace comfuse::cli
