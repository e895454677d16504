// The fused back-to-back kernel's device functions as CUDA C with inline PTX.
#include "codegen/b2b_device_functions.h"

#include <string>

#include "codegen/device_prelude.h"
#include "codegen/wgmma_emitter.h"

namespace comfuse::codegen {
namespace {

void pack_function(CodeStream& out, te::DType operand) {
  const std::string type = operand == te::DType::bf16 ? "bf16x2" : "f16x2";
  out.line("// Two f32 values as one register of the A fragment: `lo` in the low half (the lower column).");
  out.open("__device__ __forceinline__ u32 pack_pair(float lo, float hi)");
  out.line("u32 r;");
  out.line("asm(\"cvt.rn." + type + ".f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));");
  out.line("return r;");
  out.close();
}

// W2 laid out [K, O] (attention's V) is N-major for GEMM2: TMA boxes of [64 rows of K][64 columns of O].
void mn_major_descriptor(CodeStream& out) {
  out.line(
      "// N-major B with 128-byte swizzle: 64 columns of a row contiguous (one 128-byte line), 8 rows per");
  out.line(
      "// 1024-byte swizzle atom (stride byte offset), the next 64 columns one 64x64 box further (leading "
      "offset).");
  out.open("__device__ __forceinline__ u64 smem_descriptor_mn_sw128(const void* p)");
  out.line("const u64 addr = smem_addr(p);");
  out.line(
      "return ((addr & 0x3FFFF) >> 4) | ((u64)((64 * 64 * 2) >> 4) << 16) | (64ull << 32) | (1ull << "
      "62);");
  out.close();
}

}  // namespace

void emit_b2b_device_functions(CodeStream& out, const B2BDeviceFunctions& f) {
  pack_function(out, f.operand);
  if (f.w2_n_major) mn_major_descriptor(out);
  emit_wgmma_ss(out, "wgmma_first", f.bn1, f.operand);
  if (f.operand_in_shared) {
    emit_wgmma_ss(out, "wgmma_second", f.o, f.operand, f.w2_n_major);
  } else {
    emit_wgmma_rs(out, "wgmma_second", f.o, f.operand, f.w2_n_major);
  }
  if (f.operand_in_shared || f.tma_store) {
    out.line(
        "// A warpgroup's stores to shared memory made visible to the async proxy (tensor cores, TMA), then");
    out.line("// the consumer warpgroup's 128 threads meet (named barrier 4 + consumer) before one issues.");
    out.line(
        "__device__ __forceinline__ void shared_ready(int consumer) { asm volatile(\"fence.proxy.async."
        "shared::cta;\\nbar.sync %0, 128;\" :: \"r\"(4 + consumer) : \"memory\"); }");
  }
  if (f.tma_store) out.raw(tma_store_functions());
  if (f.pingpong) {
    out.line("// Turns of the two consumer warpgroups: named barriers 2 and 3, 256 threads each.");
    out.line(
        "__device__ __forceinline__ void turn_wait(int consumer) { asm volatile(\"bar.sync %0, 256;\" :: "
        "\"r\"(2 + consumer) : \"memory\"); }");
    out.line(
        "__device__ __forceinline__ void turn_pass(int consumer) { asm volatile(\"bar.arrive %0, 256;\" :: "
        "\"r\"(2 + consumer) : \"memory\"); }");
  }
}

}  // namespace comfuse::codegen
