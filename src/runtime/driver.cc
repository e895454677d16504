// Loading libcuda with dlopen and resolving the driver API through cuGetProcAddress.
#include "runtime/driver.h"

#include <dlfcn.h>

namespace comfuse::runtime {
namespace {

std::string no_device_message(const std::string& reason) {
  return "no CUDA device: " + reason;
}

// Resolves one entry point with the ABI of CUDA `version`; missing entry points mean the driver is too old.
template <typename Fn>
void resolve(PFN_cuGetProcAddress_v12000 get_proc, const char* symbol, int version, Fn& slot) {
  void* pointer = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult result = get_proc(symbol, &pointer, version, CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (result != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || pointer == nullptr) {
    throw NoCudaDeviceError("cuGetProcAddress", static_cast<int>(result),
                            "the driver has no " + std::string(symbol) + " for CUDA " +
                                cuda_version_string(version) + " (cuGetProcAddress result " +
                                std::to_string(static_cast<int>(result)) + ", query result " +
                                std::to_string(static_cast<int>(found)) + ")");
  }
  slot = reinterpret_cast<Fn>(pointer);
}

DriverApi resolve_all(PFN_cuGetProcAddress_v12000 get_proc) {
  DriverApi api;
  resolve(get_proc, "cuGetErrorName", 6000, api.get_error_name);
  resolve(get_proc, "cuGetErrorString", 6000, api.get_error_string);
  resolve(get_proc, "cuInit", 2000, api.init);
  resolve(get_proc, "cuDriverGetVersion", 2020, api.driver_get_version);
  resolve(get_proc, "cuDeviceGetCount", 2000, api.device_get_count);
  resolve(get_proc, "cuDeviceGet", 2000, api.device_get);
  resolve(get_proc, "cuDeviceGetName", 2000, api.device_get_name);
  resolve(get_proc, "cuDeviceGetAttribute", 2000, api.device_get_attribute);
  resolve(get_proc, "cuDeviceTotalMem", 3020, api.device_total_mem);
  resolve(get_proc, "cuDeviceGetUuid", 11040, api.device_get_uuid);
  resolve(get_proc, "cuDevicePrimaryCtxRetain", 7000, api.primary_ctx_retain);
  resolve(get_proc, "cuDevicePrimaryCtxRelease", 11000, api.primary_ctx_release);
  resolve(get_proc, "cuCtxSetCurrent", 4000, api.ctx_set_current);
  resolve(get_proc, "cuCtxSynchronize", 2000, api.ctx_synchronize);
  resolve(get_proc, "cuModuleLoadData", 2000, api.module_load_data);
  resolve(get_proc, "cuModuleUnload", 2000, api.module_unload);
  resolve(get_proc, "cuModuleGetFunction", 2000, api.module_get_function);
  resolve(get_proc, "cuFuncGetAttribute", 2020, api.func_get_attribute);
  resolve(get_proc, "cuFuncSetAttribute", 9000, api.func_set_attribute);
  resolve(get_proc, "cuMemAlloc", 3020, api.mem_alloc);
  resolve(get_proc, "cuMemFree", 3020, api.mem_free);
  resolve(get_proc, "cuMemcpyHtoD", 3020, api.memcpy_htod);
  resolve(get_proc, "cuMemcpyDtoH", 3020, api.memcpy_dtoh);
  resolve(get_proc, "cuMemsetD8", 3020, api.memset_d8);
  resolve(get_proc, "cuMemsetD8Async", 3020, api.memset_d8_async);
  resolve(get_proc, "cuStreamCreate", 2000, api.stream_create);
  resolve(get_proc, "cuStreamDestroy", 4000, api.stream_destroy);
  resolve(get_proc, "cuStreamSynchronize", 2000, api.stream_synchronize);
  resolve(get_proc, "cuEventCreate", 2000, api.event_create);
  resolve(get_proc, "cuEventDestroy", 4000, api.event_destroy);
  resolve(get_proc, "cuEventRecord", 2000, api.event_record);
  resolve(get_proc, "cuEventSynchronize", 2000, api.event_synchronize);
  resolve(get_proc, "cuEventElapsedTime", 12080, api.event_elapsed_time);
  resolve(get_proc, "cuLaunchKernelEx", 11060, api.launch_kernel_ex);
  resolve(get_proc, "cuOccupancyMaxActiveClusters", 11070, api.occupancy_max_active_clusters);
  resolve(get_proc, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050, api.occupancy_max_active_blocks);
  resolve(get_proc, "cuTensorMapEncodeTiled", 12000, api.tensor_map_encode_tiled);
  return api;
}

}  // namespace

NoCudaDeviceError::NoCudaDeviceError(std::string api, int code, const std::string& reason)
    : RuntimeError(std::move(api), code, no_device_message(reason)),
      reason_(reason),
      message_(no_device_message(reason)) {}

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

Driver::Driver(const std::string& library) {
  // RTLD_NODELETE: CUPTI and the driver's own threads keep using the library; it must never be unmapped.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw NoCudaDeviceError(
        "dlopen", -1, "cannot load " + library + " (" + (why != nullptr ? why : "unknown reason") + ")");
  }
  // cuda.h renames cuGetProcAddress to cuGetProcAddress_v2 (CUDA 12.0), which is the exported symbol.
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    throw NoCudaDeviceError(
        "dlsym", -1, library + " has no cuGetProcAddress_v2 (a driver for CUDA 12.0 or newer is needed)");
  }
  api_ = resolve_all(get_proc);

  CUresult result = api_.init(0);
  if (result != CUDA_SUCCESS) {
    throw NoCudaDeviceError("cuInit", static_cast<int>(result), "cuInit failed with " + describe(result));
  }
  result = api_.driver_get_version(&version_);
  if (result != CUDA_SUCCESS) {
    throw NoCudaDeviceError("cuDriverGetVersion", static_cast<int>(result),
                            "cuDriverGetVersion failed with " + describe(result));
  }
  if (version_ < CUDA_VERSION) {
    throw NoCudaDeviceError("cuDriverGetVersion", -1,
                            "the driver supports CUDA " + cuda_version_string(version_) +
                                " but comfuse was built with CUDA " + cuda_version_string(CUDA_VERSION));
  }
}

const Driver& Driver::get() {
  // A throwing initialiser leaves the static uninitialised, so a later call tries again.
  static const Driver driver;
  return driver;
}

int Driver::device_count() const {
  int count = 0;
  check(api_.device_get_count(&count), "cuDeviceGetCount");
  return count;
}

CUdevice Driver::device(int ordinal) const {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw NoCudaDeviceError("cuDeviceGet", -1,
                            count == 0
                                ? "the driver reports 0 devices"
                                : "device " + std::to_string(ordinal) + " requested but the driver reports " +
                                      std::to_string(count) + " devices");
  }
  CUdevice device = 0;
  check(api_.device_get(&device, ordinal), "cuDeviceGet");
  return device;
}

std::string Driver::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_.get_error_name == nullptr || api_.get_error_name(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api_.get_error_string == nullptr || api_.get_error_string(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  std::string out = name != nullptr ? name : "CUDA error " + std::to_string(static_cast<int>(result));
  if (text != nullptr) out += std::string(": ") + text;
  return out;
}

void Driver::check(CUresult result, const char* api) const {
  if (result != CUDA_SUCCESS) throw RuntimeError(api, static_cast<int>(result), describe(result));
}

}  // namespace comfuse::runtime
