// The CUDA driver loaded at run time with dlopen, its entry points resolved through cuGetProcAddress.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

#include "support/error.h"

namespace comfuse::runtime {

/// No usable CUDA driver or device: libcuda cannot be loaded, lacks an entry point, is older than the toolkit
/// comfuse was built with, cuInit fails, or no device is present. A RuntimeError whose what() is exactly
/// "no CUDA device: <reason>"; api() names the failing step ("dlopen", "cuInit", ...) and code() is the
/// CUresult, or -1 when the failure is not a driver result.
class NoCudaDeviceError : public RuntimeError {
 public:
  NoCudaDeviceError(std::string api, int code, const std::string& reason);

  const char* what() const noexcept override { return message_.c_str(); }
  /// The text after "no CUDA device: ".
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
  std::string message_;
};

/// The driver entry points comfuse calls. Each member has the ABI of the versioned typedef it is declared
/// with and is requested from cuGetProcAddress with that version, so a newer driver hands back the same ABI.
struct DriverApi {
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDriverGetVersion_v2020 driver_get_version = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetName_v2000 device_get_name = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute = nullptr;
  PFN_cuDeviceTotalMem_v3020 device_total_mem = nullptr;
  PFN_cuDeviceGetUuid_v11040 device_get_uuid = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize = nullptr;
  PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
  PFN_cuModuleUnload_v2000 module_unload = nullptr;
  PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
  PFN_cuFuncGetAttribute_v2020 func_get_attribute = nullptr;
  PFN_cuFuncSetAttribute_v9000 func_set_attribute = nullptr;
  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;
  PFN_cuMemcpyHtoD_v3020 memcpy_htod = nullptr;
  PFN_cuMemcpyDtoH_v3020 memcpy_dtoh = nullptr;
  PFN_cuMemsetD8_v3020 memset_d8 = nullptr;
  PFN_cuMemsetD8Async_v3020 memset_d8_async = nullptr;
  PFN_cuStreamCreate_v2000 stream_create = nullptr;
  PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
  PFN_cuStreamSynchronize_v2000 stream_synchronize = nullptr;
  PFN_cuEventCreate_v2000 event_create = nullptr;
  PFN_cuEventDestroy_v4000 event_destroy = nullptr;
  PFN_cuEventRecord_v2000 event_record = nullptr;
  PFN_cuEventSynchronize_v2000 event_synchronize = nullptr;
  PFN_cuEventElapsedTime_v12080 event_elapsed_time = nullptr;
  PFN_cuLaunchKernelEx_v11060 launch_kernel_ex = nullptr;
  PFN_cuOccupancyMaxActiveClusters_v11070 occupancy_max_active_clusters = nullptr;
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 occupancy_max_active_blocks = nullptr;
  PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encode_tiled = nullptr;
};

/// A loaded and initialised CUDA driver. Nothing links libcuda: binaries start on machines without one, and
/// the failure surfaces as NoCudaDeviceError when a Driver is first needed. The library stays loaded for the
/// life of the process (CUPTI and other users share it), so a Driver is never unloaded.
class Driver {
 public:
  /// The soname loaded by default.
  static constexpr const char* kDefaultLibrary = "libcuda.so.1";

  /// Loads `library` with dlopen, resolves every DriverApi entry point and calls cuInit(0). Throws
  /// NoCudaDeviceError when any of these fails or when the driver supports an older CUDA than the toolkit
  /// comfuse was built with. Tests pass a bogus name to see the failure path.
  explicit Driver(const std::string& library = kDefaultLibrary);

  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  /// The process-wide driver, loaded on first use. Throws NoCudaDeviceError (again on each call) while
  /// loading fails.
  static const Driver& get();

  const DriverApi& api() const { return api_; }
  /// The CUDA version the driver supports, as cuDriverGetVersion reports it (13000 for 13.0).
  int version() const { return version_; }
  /// The number of devices; 0 is a valid answer here (Context reports it as NoCudaDeviceError).
  int device_count() const;
  /// Device `ordinal`. Throws NoCudaDeviceError when there is no such device (none at all, or too few).
  CUdevice device(int ordinal) const;

  /// Throws RuntimeError(api, result, "<CUDA_ERROR_NAME>: <description>") unless `result` is CUDA_SUCCESS.
  void check(CUresult result, const char* api) const;
  /// "CUDA_ERROR_NAME: description" for `result`.
  std::string describe(CUresult result) const;

 private:
  DriverApi api_;
  int version_ = 0;
};

/// "major.minor" of a CUDA version number as the driver and headers encode it (13000 -> "13.0").
std::string cuda_version_string(int version);

}  // namespace comfuse::runtime
