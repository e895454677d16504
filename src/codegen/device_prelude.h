// Device helpers every generated kernel starts with: inline-PTX wrappers for TMA, mbarriers, wgmma, clusters
// and bf16/f16 conversion. Plain CUDA with no includes, so NVRTC compiles it quickly.
#pragma once

#include <string>

namespace comfuse::codegen {

/// The helper source. Deterministic; changes here change every kernel's source hash.
const std::string& device_prelude();

/// The TMA store's helpers, emitted only into kernels that store with it: `tma_store_2d` (a box from shared
/// memory, one bulk group), `bulk_commit`, `bulk_wait_read_all` (the groups have read shared memory),
/// `bulk_wait_all` and `fence_proxy_async_shared` (generic-proxy writes visible to TMA and the tensor cores).
const std::string& tma_store_functions();

}  // namespace comfuse::codegen
