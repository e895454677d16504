// The kernels the GPU timing tests measure, compiled and loaded for one context, with their buffers.
#pragma once

#include "runtime/context.h"
#include "runtime/module.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/test_kernels.h"

namespace comfuse::runtime::test_kernels {

// A copy of 2 x 128 MiB: memory-bound, well past L2.
inline constexpr unsigned long long kCopyVectors = (128ull << 20) / 16;

/// The busy and copy kernels of one context.
class TimedKernels {
 public:
  explicit TimedKernels(const Context& context)
      : context_(context),
        busy_module_(context, compile(test_kernels::kBusy).image),
        copy_module_(context, compile(test_kernels::kCopy).image),
        busy_(busy_module_.function("busy")),
        copy_(copy_module_.function("copy")),
        sink_(context, 4096),
        copy_in_(context, kCopyVectors * 16),
        copy_out_(context, kCopyVectors * 16) {
    copy_in_.fill_bytes(0x3c);
  }

  void busy(CUstream stream, int iters) const {
    LaunchConfig config;
    config.grid.x = 4 * context_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    config.block.x = 256;
    config.stream = stream;
    launch(busy_, config, sink_.get(), iters);
  }

  void copy(CUstream stream) const {
    LaunchConfig config;
    config.grid.x = 8 * context_.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    config.block.x = 512;
    config.stream = stream;
    launch(copy_, config, copy_out_.get(), copy_in_.get(), kCopyVectors);
  }

 private:
  const Context& context_;
  Module busy_module_;
  Module copy_module_;
  Function busy_;
  Function copy_;
  DeviceBuffer sink_;
  DeviceBuffer copy_in_;
  DeviceBuffer copy_out_;
};

}  // namespace comfuse::runtime::test_kernels
