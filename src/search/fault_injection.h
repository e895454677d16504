// Deliberately broken kernels, for proving that the tuner contains faulty candidates.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace comfuse::search {

enum class Fault : std::uint8_t {
  kOutOfBoundsWrite,  // thread 0 of block 0 stores through a wild pointer: an illegal-address fault
  kTrap,              // thread 0 of block 0 executes `trap`
  kHang,              // thread 0 of every block spins forever
};

/// "oob_write", "trap", "hang".
std::string_view fault_name(Fault fault);
std::optional<Fault> parse_fault(std::string_view name);

/// `source` with `fault` inserted at the top of the body of kernel `kernel_name`. Throws InternalError when
/// the kernel's definition is not found.
std::string inject_fault(const std::string& source, const std::string& kernel_name, Fault fault);

}  // namespace comfuse::search
