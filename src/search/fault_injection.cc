// Fault injection into generated kernels.
#include "search/fault_injection.h"

#include "support/error.h"

namespace comfuse::search {

std::string_view fault_name(Fault fault) {
  switch (fault) {
    case Fault::kOutOfBoundsWrite:
      return "oob_write";
    case Fault::kTrap:
      return "trap";
    case Fault::kHang:
      return "hang";
  }
  return "?";
}

std::optional<Fault> parse_fault(std::string_view name) {
  for (Fault f : {Fault::kOutOfBoundsWrite, Fault::kTrap, Fault::kHang}) {
    if (fault_name(f) == name) return f;
  }
  return std::nullopt;
}

std::string inject_fault(const std::string& source, const std::string& kernel_name, Fault fault) {
  const std::size_t entry = source.find("__global__");
  const std::size_t name = entry == std::string::npos ? entry : source.find(kernel_name + "(", entry);
  const std::size_t body = name == std::string::npos ? name : source.find('{', name);
  if (body == std::string::npos) {
    throw InternalError("inject_fault: no definition of kernel '" + kernel_name + "' in the source");
  }
  std::string code;
  switch (fault) {
    case Fault::kOutOfBoundsWrite:
      code =
          "if (threadIdx.x == 0 && blockIdx.x == 0) *reinterpret_cast<volatile int*>(0xdead00000000ull) = 1;";
      break;
    case Fault::kTrap:
      code = "if (threadIdx.x == 0 && blockIdx.x == 0) asm volatile(\"trap;\");";
      break;
    case Fault::kHang:
      code = "if (threadIdx.x == 0) for (;;) asm volatile(\"nanosleep.u32 1000;\");";
      break;
  }
  std::string out = source;
  out.insert(body + 1, "\n  /* injected fault: " + std::string(fault_name(fault)) + " */ " + code + "\n");
  return out;
}

}  // namespace comfuse::search
