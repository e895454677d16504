"""A device copy of the bytes the K = 1024 rows' finish kernels move: the floor those kernels are compared with.

Each finish kernel reads its stash and writes its output once (bf16, [M, N]). This copies a bf16 tensor of the
same shape on the GPU (torch's copy_), timed as the PyTorch baselines are without Triton
(torch_baselines.cuda_event_bench: CUDA events around each copy, L2 cleared before each, the median). Prints one
line a shape. benchmarks/NOTES.md, "Question — how far the finish kernels are from a copy of their bytes".
"""
import torch_baselines

SHAPES = [("post-LN M16384 N1024", 16384, 1024), ("softmax M4096 N8192", 4096, 8192),
          ("gelu-LN M16384 N4096", 16384, 4096)]


def main():
    torch_baselines.import_torch()
    torch = torch_baselines.torch
    print(torch.cuda.get_device_name())
    for name, rows, cols in SHAPES:
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        median = torch_baselines.cuda_event_bench(lambda: y.copy_(x))
        megabytes = 2 * x.numel() * x.element_size() / 1e6
        print(f"{name}: {median:.1f} us median, {megabytes:.0f} MB read and written, "
              f"{megabytes / median:.2f} TB/s")


if __name__ == "__main__":
    main()
