// Module loading and kernel launches through cuLaunchKernelEx.
#include "runtime/module.h"

#include <array>
#include <utility>

namespace comfuse::runtime {
namespace {

// The most dynamic shared memory a kernel may use without opting in.
constexpr unsigned kDefaultDynamicSharedLimit = 48 * 1024;
// The largest cluster every device that supports clusters accepts.
constexpr unsigned kPortableClusterSize = 8;

using LaunchAttributes = std::array<CUlaunchAttribute, 2>;

std::string dims(const Dim3& d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" + std::to_string(d.z);
}

void validate(const Function& function, const LaunchConfig& config) {
  const std::string where = "launch of '" + function.name() + "': ";
  if (config.grid.volume() == 0 || config.block.volume() == 0 || config.cluster.volume() == 0) {
    throw CompileError(where + "grid " + dims(config.grid) + ", block " + dims(config.block) +
                       " and cluster " + dims(config.cluster) + " must have no zero extent");
  }
  if (config.grid.x % config.cluster.x != 0 || config.grid.y % config.cluster.y != 0 ||
      config.grid.z % config.cluster.z != 0) {
    throw CompileError(where + "grid " + dims(config.grid) + " is not a multiple of cluster " +
                       dims(config.cluster));
  }
}

// Raises the kernel's limits that `config` needs: dynamic shared memory above the default, clusters above the
// portable size.
void allow(const Function& function, const LaunchConfig& config) {
  if (config.dynamic_shared_bytes > kDefaultDynamicSharedLimit) {
    function.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           static_cast<int>(config.dynamic_shared_bytes));
  }
  if (config.cluster.volume() > kPortableClusterSize) {
    function.set_attribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  }
}

// The driver's form of `config` over `grid`, with its attributes in `attributes`: the cluster shape when the
// cluster has more than one block, and the cooperative flag.
CUlaunchConfig driver_config(const LaunchConfig& config, const Dim3& grid, LaunchAttributes& attributes) {
  CUlaunchConfig out = {};
  out.gridDimX = grid.x;
  out.gridDimY = grid.y;
  out.gridDimZ = grid.z;
  out.blockDimX = config.block.x;
  out.blockDimY = config.block.y;
  out.blockDimZ = config.block.z;
  out.sharedMemBytes = config.dynamic_shared_bytes;
  out.hStream = config.stream;
  unsigned count = 0;
  if (config.cluster.volume() > 1) {
    CUlaunchAttribute& cluster = attributes[count++];
    cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster.value.clusterDim.x = config.cluster.x;
    cluster.value.clusterDim.y = config.cluster.y;
    cluster.value.clusterDim.z = config.cluster.z;
  }
  if (config.cooperative) {
    CUlaunchAttribute& cooperative = attributes[count++];
    cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    cooperative.value.cooperative = 1;
  }
  out.attrs = count > 0 ? attributes.data() : nullptr;
  out.numAttrs = count;
  return out;
}

}  // namespace

int Function::attribute(CUfunction_attribute attribute) const {
  int value = 0;
  driver_->check(driver_->api().func_get_attribute(&value, attribute, function_), "cuFuncGetAttribute");
  return value;
}

void Function::set_attribute(CUfunction_attribute attribute, int value) const {
  driver_->check(driver_->api().func_set_attribute(function_, attribute, value), "cuFuncSetAttribute");
}

Module::Module(const Context& context, std::string_view image) : driver_(&context.driver()) {
  // cuModuleLoadData reads PTX as a NUL-terminated string; a cubin carries its own size. Copy so both work.
  std::string owned(image);
  driver_->check(driver_->api().module_load_data(&module_, owned.c_str()), "cuModuleLoadData");
}

Module::~Module() {
  if (module_ != nullptr) driver_->api().module_unload(module_);
}

Module::Module(Module&& other) noexcept
    : driver_(other.driver_), module_(std::exchange(other.module_, nullptr)) {}

Function Module::function(const std::string& name) const {
  CUfunction function = nullptr;
  CUresult result = driver_->api().module_get_function(&function, module_, name.c_str());
  if (result != CUDA_SUCCESS) {
    throw RuntimeError("cuModuleGetFunction", static_cast<int>(result),
                       "kernel '" + name + "': " + driver_->describe(result));
  }
  return Function(*driver_, function, name);
}

int max_active_clusters(const Function& function, const LaunchConfig& config) {
  allow(function, config);
  LaunchAttributes attributes = {};
  // One cluster's grid: the query reads the cluster's shape, not the grid's.
  const CUlaunchConfig query = driver_config(config, config.cluster, attributes);
  int clusters = 0;
  const Driver& driver = function.driver();
  const CUresult result = driver.api().occupancy_max_active_clusters(&clusters, function.get(), &query);
  if (result != CUDA_SUCCESS) {
    throw RuntimeError("cuOccupancyMaxActiveClusters", static_cast<int>(result),
                       "kernel '" + function.name() + "' (block " + dims(config.block) + ", cluster " +
                           dims(config.cluster) + ", dynamic shared " +
                           std::to_string(config.dynamic_shared_bytes) +
                           " bytes): " + driver.describe(result));
  }
  return clusters;
}

int max_active_blocks_per_multiprocessor(const Function& function, const LaunchConfig& config) {
  allow(function, config);
  const int threads = static_cast<int>(config.block.x * config.block.y * config.block.z);
  int blocks = 0;
  const Driver& driver = function.driver();
  const CUresult result =
      driver.api().occupancy_max_active_blocks(&blocks, function.get(), threads, config.dynamic_shared_bytes);
  if (result != CUDA_SUCCESS) {
    throw RuntimeError("cuOccupancyMaxActiveBlocksPerMultiprocessor", static_cast<int>(result),
                       "kernel '" + function.name() + "' (block " + dims(config.block) + ", dynamic shared " +
                           std::to_string(config.dynamic_shared_bytes) +
                           " bytes): " + driver.describe(result));
  }
  return blocks;
}

void launch(const Function& function, const LaunchConfig& config, void** args) {
  validate(function, config);
  allow(function, config);
  LaunchAttributes attributes = {};
  const CUlaunchConfig launch_config = driver_config(config, config.grid, attributes);
  const Driver& driver = function.driver();
  CUresult result = driver.api().launch_kernel_ex(&launch_config, function.get(), args, nullptr);
  if (result != CUDA_SUCCESS) {
    throw RuntimeError("cuLaunchKernelEx", static_cast<int>(result),
                       "kernel '" + function.name() + "' (grid " + dims(config.grid) + ", block " +
                           dims(config.block) + ", cluster " + dims(config.cluster) +
                           (config.cooperative ? ", cooperative" : "") + ", dynamic shared " +
                           std::to_string(config.dynamic_shared_bytes) +
                           " bytes): " + driver.describe(result));
  }
}

}  // namespace comfuse::runtime
