// NVRTC compilation without a GPU: sm_90a cubins, PTX, logs of failed compiles, resource usage.
#include "runtime/nvrtc_compiler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/elf_reader.h"
#include "runtime/test_kernels.h"
#include "support/error.h"

namespace comfuse::runtime {
namespace {

bool has_option(const std::vector<std::string>& options, const std::string& option) {
  return std::find(options.begin(), options.end(), option) != options.end();
}

TEST(NvrtcCompiler, WgmmaKernelCompilesToSm90aCubin) {
  const CompiledProgram program = compile(test_kernels::kWgmma);
  ASSERT_FALSE(program.image.empty());
  EXPECT_TRUE(is_elf(program.image));
  EXPECT_EQ(program.output, OutputKind::cubin);
  EXPECT_EQ(program.arch, "sm_90a");
  EXPECT_TRUE(has_option(program.options, "--gpu-architecture=sm_90a"));
  EXPECT_EQ(program.options, nvrtc_options(CompileOptions{}));
  EXPECT_EQ(program.nvrtc_version, nvrtc_version());
  ASSERT_TRUE(program.kernels.contains("wgmma_bf16"));
  EXPECT_GT(program.kernels.at("wgmma_bf16").registers, 32);  // 32 accumulators alone.
}

TEST(NvrtcCompiler, PtxOnRequest) {
  CompileOptions options;
  options.output = OutputKind::ptx;
  const CompiledProgram program = compile(test_kernels::kWgmma, options);
  EXPECT_FALSE(is_elf(program.image));
  EXPECT_NE(program.image.find(".entry wgmma_bf16"), std::string::npos);
  EXPECT_NE(program.image.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"), std::string::npos);
  EXPECT_NE(program.image.find(".target sm_90a"), std::string::npos);
  EXPECT_TRUE(has_option(program.options, "--gpu-architecture=compute_90a"));
  EXPECT_TRUE(program.kernels.empty());
}

TEST(NvrtcCompiler, CompileErrorCarriesTheLog) {
  const char* source =
      "extern \"C\" __global__ void broken(float* out) {\n"
      "  out[0] = 1.0f;\n"
      "  out[1] = undeclared_value;\n"
      "}\n";
  CompileOptions options;
  options.program_name = "broken.cu";
  try {
    compile(source, options);
    FAIL() << "compiled a broken program";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.api(), "nvrtcCompileProgram");
    EXPECT_EQ(error.code(), 6);  // NVRTC_ERROR_COMPILATION
    const std::string message = error.what();
    EXPECT_NE(message.find("broken.cu(3)"), std::string::npos) << message;
    EXPECT_NE(message.find("identifier \"undeclared_value\" is undefined"), std::string::npos) << message;
    EXPECT_NE(error.log().find("broken.cu(3)"), std::string::npos) << error.log();
    EXPECT_NE(message.find("for sm_90a"), std::string::npos) << message;
  }
}

TEST(NvrtcCompiler, InvalidOptionIsARuntimeError) {
  CompileOptions options;
  options.extra = {"--no-such-option"};
  try {
    compile(test_kernels::kVectorAdd, options);
    FAIL() << "accepted an invalid option";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.api(), "nvrtcCompileProgram");
    EXPECT_NE(std::string(error.what()).find("--no-such-option"), std::string::npos) << error.what();
  }
}

TEST(NvrtcCompiler, ResourceUsageOfAKernelWithKnownRegisterPressure) {
  CompileOptions options;
  options.extra = {"--maxrregcount=32"};
  const CompiledProgram program = compile(test_kernels::kRegisterPressure, options);
  std::string trace = "options:";
  for (const std::string& option : program.options) trace += " " + option;
  SCOPED_TRACE(trace + "\nlog:\n" + program.log);
  ASSERT_TRUE(program.kernels.contains("pressure")) << program.log;
  ASSERT_TRUE(program.kernels.contains("trivial")) << program.log;
  const ResourceUsage& pressure = program.kernels.at("pressure");
  EXPECT_GT(pressure.registers, 16);
  EXPECT_LE(pressure.registers, 32);
  EXPECT_GT(pressure.spill_store_bytes, 0) << program.log;
  EXPECT_GT(pressure.spill_load_bytes, 0) << program.log;
  EXPECT_EQ(pressure.static_shared_bytes, 4096);
  EXPECT_EQ(pressure.barriers, 1);
  const ResourceUsage& trivial = program.kernels.at("trivial");
  EXPECT_GT(trivial.registers, 0);
  EXPECT_LT(trivial.registers, 32);
  EXPECT_EQ(trivial.spill_store_bytes, 0);
  EXPECT_EQ(trivial.static_shared_bytes, 0);

  // The two sources agree: ptxas's report and the cubin's own attributes.
  const auto report = parse_ptxas_report(program.log);
  for (const CubinKernel& kernel : read_cubin_kernels(program.image)) {
    ASSERT_TRUE(report.contains(kernel.name)) << kernel.name;
    EXPECT_EQ(report.at(kernel.name).registers, kernel.registers) << kernel.name;
    EXPECT_EQ(report.at(kernel.name).stack_frame_bytes, kernel.frame_bytes) << kernel.name;
  }
}

// With a driver present, NVRTC 13's own cache (in the driver's compute cache) skips ptxas on a hit, and the
// log then has no resource report: seen on the H200, where this kernel's second compile came back with an
// empty log.
TEST(NvrtcCompiler, NvrtcsOwnCacheIsOff) {
  EXPECT_TRUE(has_option(nvrtc_options(CompileOptions{}), "--no-cache"));
  CompileOptions ptx;
  ptx.output = OutputKind::ptx;
  EXPECT_TRUE(has_option(nvrtc_options(ptx), "--no-cache"));
}

TEST(NvrtcCompiler, KernelsMissingFromTheReportHaveUnknownFields) {
  const auto usage = parse_ptxas_report("");
  EXPECT_TRUE(usage.empty());
  EXPECT_EQ(ResourceUsage{}, (ResourceUsage{-1, -1, -1, -1, -1, -1}));
}

TEST(NvrtcCompiler, ParsesAPtxasReport) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'small' for 'sm_90a'\n"
      "ptxas info    : Function properties for small\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'spill' for 'sm_90a'\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Function properties for spill\n"
      "ptxas         .     48 bytes stack frame, 44 bytes spill stores, 40 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 48 bytes cumulative stack size, 4096 bytes "
      "smem\n";
  const auto usage = parse_ptxas_report(log);
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage.at("small"), (ResourceUsage{10, 0, 0, 0, 0, 0}));
  EXPECT_EQ(usage.at("spill"), (ResourceUsage{255, 44, 40, 48, 4096, 1}));
}

TEST(NvrtcCompiler, IncludeDirectoriesComeFromTheToolkit) {
  const std::vector<std::string> dirs = toolkit_include_dirs();
  ASSERT_FALSE(dirs.empty());
  const std::vector<std::string> options = nvrtc_options(CompileOptions{});
  EXPECT_TRUE(has_option(options, "--include-path=" + dirs.front()));
  // A toolkit header resolves through them.
  const CompiledProgram program = compile(
      "#include <cuda_bf16.h>\n"
      "extern \"C\" __global__ void scale(__nv_bfloat16* x) { x[threadIdx.x] = __float2bfloat16(2.0f); }\n");
  EXPECT_TRUE(program.kernels.contains("scale"));
}

TEST(NvrtcCompiler, TheGpuTestKernelsCompile) {
  for (const char* source : {test_kernels::kVectorAdd, test_kernels::kDynamicShared,
                             test_kernels::kClusterExchange, test_kernels::kBusy, test_kernels::kCopy}) {
    const CompiledProgram program = compile(source);
    EXPECT_EQ(program.kernels.size(), 1u) << source << program.log;
  }
}

TEST(ElfReader, RejectsWhatIsNotElf) {
  EXPECT_FALSE(is_elf("// PTX"));
  EXPECT_FALSE(is_elf(""));
  EXPECT_THROW(read_cubin_kernels("not an elf image"), InternalError);
  std::string truncated =
      "\x7f"
      "ELF";
  truncated += std::string(8, '\0');
  truncated[4] = 2;  // ELFCLASS64
  truncated[5] = 1;  // little-endian
  EXPECT_THROW(read_cubin_kernels(truncated), InternalError);
}

TEST(ElfReader, ATruncatedCubinIsAnInternalError) {
  const CompiledProgram program = compile(test_kernels::kVectorAdd);
  EXPECT_EQ(read_cubin_kernels(program.image).size(), 1u);
  EXPECT_THROW(read_cubin_kernels(program.image.substr(0, program.image.size() / 2)), InternalError);
}

}  // namespace
}  // namespace comfuse::runtime
