// Loaded modules, their kernels, and launches with grid, block and cluster shapes through cuLaunchKernelEx.
#pragma once

#include <cuda.h>

#include <array>
#include <string>
#include <string_view>

#include "runtime/context.h"

namespace comfuse::runtime {

/// A kernel of a loaded Module; valid while the Module lives. Copyable (a handle).
class Function {
 public:
  Function(const Driver& driver, CUfunction function, std::string name)
      : driver_(&driver), function_(function), name_(std::move(name)) {}

  /// cuFuncGetAttribute (registers: CU_FUNC_ATTRIBUTE_NUM_REGS; static shared memory: ..._SHARED_SIZE_BYTES).
  int attribute(CUfunction_attribute attribute) const;
  /// cuFuncSetAttribute.
  void set_attribute(CUfunction_attribute attribute, int value) const;

  const Driver& driver() const { return *driver_; }
  CUfunction get() const { return function_; }
  const std::string& name() const { return name_; }

 private:
  const Driver* driver_;
  CUfunction function_;
  std::string name_;
};

/// A module loaded from a cubin (or PTX, which the driver then compiles). Not copyable; movable.
class Module {
 public:
  /// cuModuleLoadData on `image`; a bad image is a RuntimeError naming cuModuleLoadData.
  Module(const Context& context, std::string_view image);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&&) = delete;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The kernel named `name` (the lowered name; use extern "C" kernels for plain names). A missing name is a
  /// RuntimeError naming cuModuleGetFunction and the kernel.
  Function function(const std::string& name) const;

 private:
  const Driver* driver_;
  CUmodule module_ = nullptr;
};

/// Three extents; unset ones are 1.
struct Dim3 {
  unsigned x = 1;
  unsigned y = 1;
  unsigned z = 1;

  unsigned volume() const { return x * y * z; }
  bool operator==(const Dim3&) const = default;
};

/// The shape of one launch. `grid` counts blocks (not clusters) and must be a multiple of `cluster` in each
/// extent; a cluster of {1,1,1} adds no cluster attribute, so kernels declared with __cluster_dims__ keep
/// theirs.
struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  Dim3 cluster;
  /// Dynamic shared memory; above 48 KB the kernel's limit is raised with
  /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first.
  unsigned dynamic_shared_bytes = 0;
  /// nullptr is the legacy default stream.
  CUstream stream = nullptr;
  /// A cooperative launch: every block of the grid resident at once, or the launch fails
  /// (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) instead of leaving blocks that wait on each other to hang.
  bool cooperative = false;
};

/// Launches `function` with kernel parameters `args` (one pointer per parameter, as cuLaunchKernelEx takes
/// them). Clusters of more than 8 blocks set CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED. A grid that
/// is not a multiple of the cluster, or an empty grid or block, is a CompileError naming the kernel and the
/// extents; driver failures are RuntimeError naming cuLaunchKernelEx. Asynchronous faults appear at the next
/// synchronisation.
void launch(const Function& function, const LaunchConfig& config, void** args);

/// How many clusters of `config.cluster` (with its block and dynamic shared memory) the device runs at once:
/// cuOccupancyMaxActiveClusters, a RuntimeError naming it on failure. `config.grid` is ignored.
int max_active_clusters(const Function& function, const LaunchConfig& config);

/// How many CTAs of `config.block` threads (with its dynamic shared memory, no cluster) one multiprocessor
/// runs at once: cuOccupancyMaxActiveBlocksPerMultiprocessor, a RuntimeError naming it on failure.
/// `config.grid` is ignored.
int max_active_blocks_per_multiprocessor(const Function& function, const LaunchConfig& config);

/// Launches with the kernel parameters given by value (each must match the kernel's parameter type exactly).
template <typename... Args>
void launch(const Function& function, const LaunchConfig& config, const Args&... args) {
  std::array<void*, sizeof...(Args)> pointers = {const_cast<void*>(static_cast<const void*>(&args))...};
  launch(function, config, pointers.data());
}

}  // namespace comfuse::runtime
