// The fused back-to-back kernel's device functions: which are emitted for which kernel, GEMM2's operand
// from registers or shared memory, and the TMA store's.
#include "codegen/b2b_device_functions.h"

#include <gtest/gtest.h>

namespace comfuse::codegen {
namespace {

std::string emitted(const B2BDeviceFunctions& f) {
  CodeStream out;
  emit_b2b_device_functions(out, f);
  return out.str();
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(B2BDeviceFunctions, MlpWithTheOperandInRegisters) {
  const std::string text = emitted({te::DType::bf16, 128, 64, false, false, false, false});
  EXPECT_TRUE(has(text, "cvt.rn.bf16x2.f32"));
  EXPECT_TRUE(has(text, "void wgmma_first(float (&d)[64], u64 desc_a, u64 desc_b, int scale_d)"));
  EXPECT_TRUE(has(text, "m64n128k16.f32.bf16.bf16"));
  EXPECT_TRUE(has(text, "void wgmma_second(float (&d)[32], const u32 (&a)[4], u64 desc_b, int scale_d)"));
  EXPECT_FALSE(has(text, "smem_descriptor_mn_sw128"));  // W2 laid out [O, N]: K-major
  EXPECT_FALSE(has(text, "shared_ready"));
  EXPECT_FALSE(has(text, "turn_wait"));
  EXPECT_FALSE(has(text, "tma_store_2d"));
}

TEST(B2BDeviceFunctions, TheTmaStoreFencesItsStagedTileAndStoresBoxes) {
  const std::string text = emitted({te::DType::bf16, 64, 128, false, false, false, true});
  // The operand stays in registers; the staged tile still needs the fence and the warpgroup's barrier.
  EXPECT_TRUE(has(text, "void wgmma_second(float (&d)[64], const u32 (&a)[4], u64 desc_b, int scale_d)"));
  EXPECT_TRUE(has(text, "void shared_ready(int consumer)"));
  EXPECT_TRUE(has(text, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"));
  EXPECT_TRUE(has(text, "cp.async.bulk.wait_group.read 0;"));
}

TEST(B2BDeviceFunctions, AttentionWithTheOperandInSharedMemoryInPingPong) {
  const std::string text = emitted({te::DType::f16, 64, 128, true, true, true, false});
  EXPECT_TRUE(has(text, "cvt.rn.f16x2.f32"));
  EXPECT_TRUE(has(text, "smem_descriptor_mn_sw128"));  // V laid out [N, O]: read N-major
  // GEMM2 from two descriptors, B transposed; the operand fenced for the async proxy and met at a barrier.
  EXPECT_TRUE(has(text, "void wgmma_second(float (&d)[64], u64 desc_a, u64 desc_b, int scale_d)"));
  EXPECT_TRUE(has(text, "m64n128k16.f32.f16.f16 {%0"));
  EXPECT_TRUE(has(text, "p, 1, 1, 0, 1;"));
  EXPECT_TRUE(has(text, "fence.proxy.async.shared::cta;\\nbar.sync %0, 128;"));
  EXPECT_TRUE(has(text, "void turn_wait(int consumer)"));
  EXPECT_TRUE(has(text, "void turn_pass(int consumer)"));
  EXPECT_FALSE(has(text, "tma_store_2d"));
}

}  // namespace
}  // namespace comfuse::codegen
