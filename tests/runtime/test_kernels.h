// CUDA sources the runtime tests compile: a wgmma kernel, register pressure, and the GPU tests' kernels.
#pragma once

namespace comfuse::runtime::test_kernels {

/// One bf16 wgmma m64n64k16 by a warpgroup, operands from shared-memory descriptors. Only has to compile.
inline constexpr const char* kWgmma = R"(
extern "C" __global__ void __launch_bounds__(128) wgmma_bf16(float* out, unsigned long long desc_a,
                                                              unsigned long long desc_b, int scale_d) {
  float d[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) d[i] = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
  for (int i = 0; i < 32; ++i) out[threadIdx.x * 32 + i] = d[i];
}
)";

/// Far more live values than 32 registers hold: compiled with --maxrregcount=32 it must spill. 4 KB of static
/// shared memory. A second, trivial kernel uses few registers and no spills.
inline constexpr const char* kRegisterPressure = R"(
extern "C" __global__ void pressure(float* out, const float* in, int n) {
  __shared__ float tile[1024];
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = in[threadIdx.x + i * n];
  tile[threadIdx.x] = acc[threadIdx.x % 64];
  __syncthreads();
  float s = tile[(threadIdx.x + 1) % 1024];
#pragma unroll
  for (int i = 0; i < 64; ++i) s += acc[i] * acc[(i * 7 + 3) % 64];
  out[threadIdx.x] = s;
}

extern "C" __global__ void trivial(float* out) { out[threadIdx.x] = 1.0f; }
)";

/// out[i] = a[i] + b[i] for i < n.
inline constexpr const char* kVectorAdd = R"(
extern "C" __global__ void vector_add(float* out, const float* a, const float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
)";

/// Fills `words` 32-bit words of dynamic shared memory, then each thread sums the words it owns in reverse
/// order of another thread: out[block * blockDim + t] = sum over k of smem[words - 1 - (t + k * blockDim)],
/// where smem[w] = w * 2654435761u + seed.
inline constexpr const char* kDynamicShared = R"(
extern "C" __global__ void dynamic_shared(unsigned* out, unsigned words, unsigned seed) {
  extern __shared__ unsigned smem[];
  for (unsigned w = threadIdx.x; w < words; w += blockDim.x) smem[w] = w * 2654435761u + seed;
  __syncthreads();
  unsigned sum = 0;
  for (unsigned w = threadIdx.x; w < words; w += blockDim.x) sum += smem[words - 1 - w];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
)";

/// Each block publishes blockIdx.x * 1000 + 7 in shared memory; after a cluster barrier, thread 0 of each
/// block reads the value of the next block of its cluster through distributed shared memory (mapa +
/// ld.shared::cluster). out[2 * block] = that value, out[2 * block + 1] = the cluster size seen.
inline constexpr const char* kClusterExchange = R"(
extern "C" __global__ void cluster_exchange(unsigned* out) {
  __shared__ unsigned value;
  unsigned rank, size;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
  if (threadIdx.x == 0) value = blockIdx.x * 1000u + 7u;
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
  if (threadIdx.x == 0) {
    unsigned local, remote, seen;
    asm volatile("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(local) : "l"(&value));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"((rank + 1) % size));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(seen) : "r"(remote) : "memory");
    out[2 * blockIdx.x] = seen;
    out[2 * blockIdx.x + 1] = size;
  }
  // Keep this block's shared memory alive until every peer has read it.
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
)";

/// Arithmetic for a time proportional to `iters` (four independent FMA chains per thread).
inline constexpr const char* kBusy = R"(
extern "C" __global__ void busy(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = blockIdx.x * 1e-4f, c = 0.5f, d = 0.25f;
  for (int i = 0; i < iters; ++i) {
    a = fmaf(a, 0.9999f, 1e-4f);
    b = fmaf(b, 0.9998f, 2e-4f);
    c = fmaf(c, 0.9997f, 3e-4f);
    d = fmaf(d, 0.9996f, 4e-4f);
  }
  if (a + b + c + d == -1.0f) out[blockIdx.x] = a + b + c + d;
}
)";

/// A streaming copy of n 16-byte vectors (grid-stride).
inline constexpr const char* kCopy = R"(
extern "C" __global__ void copy(uint4* out, const uint4* in, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    out[i] = in[i];
  }
}
)";

}  // namespace comfuse::runtime::test_kernels
