// `comfuse devices`: each GPU's fingerprint, readable or as JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace comfuse::cli {

/// Runs `comfuse devices [--json]` with the arguments after "devices". Prints each device's fingerprint to
/// `out` (with --json, one JSON array of {"device": <ordinal>, "target": <fingerprint JSON>}). Returns 0 on
/// success; 3 with "no CUDA device: <reason>" on `err` when the driver or a device is missing; 2 with a usage
/// line for an unknown argument.
int run_devices(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace comfuse::cli
