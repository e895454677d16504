// Device helpers that the fused kernel's knobs add to its source, as embedded text.
#include "codegen/kernel_helpers.h"

#include <string>

#include "codegen/device_prelude.h"

namespace comfuse::codegen {
namespace {

// The device function l2_<priority>_policy(): an L2 cache policy giving every access that carries it
// `priority` (evict_last, evict_first).
std::string l2_policy_function(const std::string& priority) {
  return "__device__ __forceinline__ u64 l2_" + priority + "_policy() {\n  u64 policy;\n" +
         "  asm volatile(\"createpolicy.fractional.L2::" + priority +
         ".b64 %0, 1.0;\" : \"=l\"(policy));\n  return policy;\n}\n";
}

}  // namespace

// multicast_b's device helpers: a B box loaded into both CTAs of the cluster, and a stage released in both
// (either CTA's producer refills it in both).
void emit_multicast_helpers(CodeStream& out) {
  out.raw(
      R"CUDA(// multicast_b: a box loaded once into every CTA of `ctas` (a bit each), at the same shared-memory
// offsets, completing on each CTA's own `bar`.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TmaDescriptor* desc, u64* bar, int c0, int c1, u16 ctas) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;"
               :: "r"(smem_addr(dst)), "l"((u64)desc), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "h"(ctas) : "memory");
}
// A stage's release, here and in the peer CTA: the peer's producer writes its half of B into both. The
// arrival orders at CTA scope only, as the local one: the stage's reads were wgmma's, done at wgmma_wait, and
// no other memory operation needs to reach the peer first (a cluster-scope release waits for the thread's
// global stores as well).
__device__ __forceinline__ void release_stage(u64* bar, u32 peer) {
  mbar_arrive(bar);
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(map_to_rank(bar, peer)) : "memory");
}

)CUDA");
}

// stash_evict_last's device helpers: the stash's element and pair stores with an L2 evict_last policy, or
// its TMA box store from the staged slot. No memory clobber on the element stores: nothing in the main
// kernel reads the stash, and the finish kernel is a later launch (the box store reads shared memory, so it
// keeps the clobber of tma_store_2d).
void emit_stash_keep_helpers(CodeStream& out, bool by_tma) {
  out.raw("// stash_evict_last: L2 keeps these lines ahead of lines stored or loaded without a policy.\n" +
          l2_policy_function("evict_last"));
  if (by_tma) {
    out.raw(
        R"CUDA(__device__ __forceinline__ void tma_store_2d_keep(const TmaDescriptor* desc, const void* src, int c0, int c1, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%2, %3}], [%1], %4;" :: "l"((u64)desc), "r"(smem_addr(src)), "r"(c0), "r"(c1), "l"(policy) : "memory");
}

)CUDA");
    return;
  }
  out.raw(
      R"CUDA(__device__ __forceinline__ void st_keep(u16* p, u16 v, u64 policy) {
  asm volatile("st.global.L2::cache_hint.b16 [%0], %1, %2;" :: "l"(p), "h"(v), "l"(policy));
}
__device__ __forceinline__ void st_keep(float* p, float v, u64 policy) {
  asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" :: "l"(p), "f"(v), "l"(policy));
}
__device__ __forceinline__ void st_keep(u32* p, u32 v, u64 policy) {
  asm volatile("st.global.L2::cache_hint.b32 [%0], %1, %2;" :: "l"(p), "r"(v), "l"(policy));
}
__device__ __forceinline__ void st_keep(float2* p, float2 v, u64 policy) {
  asm volatile("st.global.L2::cache_hint.v2.f32 [%0], {%1, %2}, %3;" :: "l"(p), "f"(v.x), "f"(v.y), "l"(policy));
}

)CUDA");
}

// streaming_hints' device helpers: the main kernel's loads of lines read once carry an evict_first policy.
// (The finish kernel's streaming loads and stores are the built-in __ldcs and __stcs.)
void emit_streaming_helpers(CodeStream& out) {
  out.raw("// streaming_hints: L2 drops these lines ahead of lines loaded or stored without a policy.\n" +
          l2_policy_function("evict_first"));
  out.raw(
      R"CUDA(__device__ __forceinline__ void tma_load_2d_hint(void* dst, const TmaDescriptor* desc, u64* bar, int c0, int c1, u64 policy) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;"
               :: "r"(smem_addr(dst)), "l"((u64)desc), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "l"(policy) : "memory");
}

)CUDA");
}

// packed_rounding: a 16-bit rounding by the packed conversion (both halves from the same value; the low half
// kept), which ptxas lowers to F2FP on the ALU where the scalar conversion is an F2F on the conversion pipe.
void emit_packed_rounding_helpers(CodeStream& out) {
  out.raw(
      R"CUDA(__device__ __forceinline__ float round_bf16_packed(float f) {
  u32 p; asm("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(p) : "f"(f)); return __uint_as_float(p << 16);
}
__device__ __forceinline__ float round_f16_packed(float f) {
  u32 p; asm("cvt.rn.f16x2.f32 %0, %1, %1;" : "=r"(p) : "f"(f)); return f16_to_f32((u16)p);
}

)CUDA");
}

// The TMA-store epilogue's device helpers, emitted only into kernels that use it.
void emit_tma_store_helpers(CodeStream& out, bool in_chunks) {
  if (in_chunks) {
    out.raw(
        R"CUDA(// TMA-store epilogue in chunks: a warpgroup's 64 x BN tile leaves 64 columns at a time through two
// boxes of [64 rows][64 columns], box b of the tile in buffer b % 2, 128-byte swizzled (16-byte chunk c of
// row r at chunk c ^ (r % 8)), each stored by one thread once filled.
__device__ __forceinline__ u32 staged_offset(int row, int col) {
  const int buffer = (col >> 6) & 1, byte = (col & 63) * 2;
  return (u32)(buffer * 8192 + row * 128 + ((((byte >> 4) ^ (row & 7))) << 4) + (byte & 15));
}
// Waits until every bulk store group but the latest has read its shared memory.
__device__ __forceinline__ void bulk_wait_read_all_but_one() { asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); }
)CUDA");
  } else {
    out.raw(
        R"CUDA(// TMA-store epilogue: the 64 x BN output tile of a warpgroup in boxes of [64 rows][64 columns],
// 128-byte swizzled (16-byte chunk c of row r at chunk c ^ (r % 8)), stored by one thread.
__device__ __forceinline__ u32 staged_offset(int row, int col) {
  const int box = col >> 6, byte = (col & 63) * 2;
  return (u32)(box * 8192 + row * 128 + ((((byte >> 4) ^ (row & 7))) << 4) + (byte & 15));
}
)CUDA");
  }
  out.raw(tma_store_functions());
  out.raw(R"CUDA(// Named barriers 2 and 3: the 128 threads of consumer warpgroup 0 or 1.
__device__ __forceinline__ void warpgroup_sync(int consumer) { asm volatile("bar.sync %0, 128;" :: "r"(2 + consumer) : "memory"); }

)CUDA");
}

void emit_prefetch_helper(CodeStream& out) {
  out.line("// A bulk prefetch of `bytes` (a multiple of 16, 16-byte aligned) into L2.");
  out.open("__device__ __forceinline__ void prefetch_l2(const void* p, u32 bytes)");
  out.line(R"(asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");)");
  out.close();
  out.line();
}

void emit_global_exchange_helpers(CodeStream& out) {
  out.raw(
      R"CUDA(// global_exchange: a group's round counter read with acquire semantics at GPU scope (the peers' partials,
// released before their arrivals, are visible after it), and named barriers 4 and 5 for the 128 threads of
// consumer warpgroup 0 or 1, for a warpgroup that owns its rows and exchanges on its own.
__device__ __forceinline__ u32 ld_acquire_gpu(const u32* p) { u32 v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ void exchange_sync(int consumer) { asm volatile("bar.sync %0, 128;" :: "r"(4 + consumer) : "memory"); }

)CUDA");
}

}  // namespace comfuse::codegen
