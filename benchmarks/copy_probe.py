"""A device copy of the bytes the K = 1024 rows' finish kernels move: the floor those kernels are compared with.

Each finish kernel reads its stash and writes its output once (bf16, [M, N]). This copies a bf16 tensor of the
same shape on the GPU (torch's copy_), the cache flushed before each copy, timed by CUDA events around the copy
on a stream the flush keeps busy, median of 30. Prints one line a shape. benchmarks/NOTES.md, "Question — how
far the finish kernels are from a copy of their bytes".
"""
import torch

SHAPES = [("post-LN M16384 N1024", 16384, 1024), ("softmax M4096 N8192", 4096, 8192),
          ("gelu-LN M16384 N4096", 16384, 4096)]


def main():
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    print(torch.cuda.get_device_name())
    for name, rows, cols in SHAPES:
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        for _ in range(3):
            y.copy_(x)
        times = []
        for _ in range(30):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.zero_()
            begin.record()
            y.copy_(x)
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) * 1e3)
        times.sort()
        median = times[len(times) // 2]
        megabytes = 2 * x.numel() * x.element_size() / 1e6
        print(f"{name}: {median:.1f} us median (min {times[0]:.1f}), {megabytes:.0f} MB read and written, "
              f"{megabytes / median / 1e3:.2f} TB/s")


if __name__ == "__main__":
    main()
