// SHA-256 digests as lowercase hex, for workload keys, cache keys and source checks.
#pragma once

#include <string>
#include <string_view>

namespace comfuse {

/// The SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

}  // namespace comfuse
