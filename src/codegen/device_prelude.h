// Device helpers every generated kernel starts with: inline-PTX wrappers for TMA, mbarriers, wgmma, clusters
// and bf16/f16 conversion. Plain CUDA with no includes, so NVRTC compiles it quickly.
#pragma once

#include <string>

namespace comfuse::codegen {

/// The helper source. Deterministic; changes here change every kernel's source hash.
const std::string& device_prelude();

}  // namespace comfuse::codegen
