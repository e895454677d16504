// The fused back-to-back kernel's emitter: MLPs at tail shapes compile with NVRTC to sm_90a cubins without
// spills; what it does not generate yet is refused by name. (Running it is the GPU test's job.)
#include "codegen/b2b_emitter.h"

#include <gtest/gtest.h>

#include "runtime/nvrtc_compiler.h"
#include "te/error_of.h"
#include "te/workloads.h"

namespace comfuse::codegen {
namespace {

const std::string kKey = "sha256:b2b0000000000000000000000000000000000000000000000000000000000000";

KernelSource emit(const std::string& workload, const te::Shape& shape, int stages = 4) {
  return emit_b2b_kernel(schedule::plan_b2b(te::build_workload(workload, shape)), B2BSchedule{stages}, kKey);
}

TEST(B2BEmitter, MlpsCompileWithoutSpills) {
  for (const auto& [workload, shape] : std::vector<std::pair<std::string, te::Shape>>{
           {"mlp_relu", {{"M", 300}, {"K", 72}, {"N", 200}, {"O", 64}}},
           {"mlp_gelu", {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}},
           {"mlp_relu", {{"M", 128}, {"K", 256}, {"N", 96}, {"O", 256}}}}) {
    const KernelSource source = emit(workload, shape);
    EXPECT_EQ(source.launch.block_x, 384);
    EXPECT_EQ(source.launch.grid_x, (shape.at("M") + 127) / 128);
    EXPECT_LE(source.launch.shared_bytes, 227 * 1024);
    ASSERT_EQ(source.params.size(), 4u);
    EXPECT_EQ(source.params[2].box_rows, shape.at("O"));
    runtime::CompileOptions options;
    options.program_name = source.name + ".cu";
    const runtime::CompiledProgram compiled = runtime::compile(source.source, options);
    const runtime::ResourceUsage& usage = compiled.kernels.at(source.name);
    EXPECT_EQ(usage.spill_store_bytes, 0) << workload << "\n" << compiled.log;
    EXPECT_EQ(usage.spill_load_bytes, 0) << workload;
    EXPECT_GT(usage.registers, 0);
  }
}

TEST(B2BEmitter, SameInputsSameSource) {
  const te::Shape shape = {{"M", 256}, {"K", 64}, {"N", 128}, {"O", 64}};
  EXPECT_EQ(emit("mlp_gelu", shape).source, emit("mlp_gelu", shape).source);
  EXPECT_NE(emit("mlp_gelu", shape, 3).source, emit("mlp_gelu", shape, 4).source);
}

TEST(B2BEmitter, RefusesWhatItDoesNotGenerateYet) {
  EXPECT_EQ(te::error_of([] { emit("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 1024}}); }),
            "fused back-to-back kernel: GEMM2 has O=1024 columns: one warpgroup's accumulator holds a multiple of 8 "
            "up to 256");
  EXPECT_EQ(te::error_of([] { emit("attention", {{"BH", 2}, {"L", 64}, {"D", 64}}); }),
            "fused back-to-back kernel: batched contractions ('S') are not supported yet");
  EXPECT_EQ(te::error_of([] { emit("mlp_relu", {{"M", 64}, {"K", 64}, {"N", 64}, {"O", 64}}, 9); }),
            "fused back-to-back kernel: stages=9 is outside [2, 6]");
}

}  // namespace
}  // namespace comfuse::codegen
