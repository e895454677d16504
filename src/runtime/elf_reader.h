// A small reader of 64-bit little-endian ELF images: cubin kernel attributes and shared-library dependencies.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace comfuse::runtime {

/// True when `image` starts with the ELF magic (cubins do; PTX does not).
bool is_elf(std::string_view image);

/// What a cubin's ELF records for one kernel.
struct CubinKernel {
  /// The kernel's symbol name (lowered name for C++ kernels).
  std::string name;
  /// EIATTR_REGCOUNT from the cubin's .nv.info section; -1 when absent.
  int registers = -1;
  /// EIATTR_FRAME_SIZE (the per-thread stack frame); -1 when absent.
  int frame_bytes = -1;
};

/// The kernels of a cubin (one per .text.<name> section that has a .nv.info.<name> section), in section
/// order. Throws InternalError naming the offending offset when the image is not a well-formed ELF64 file.
std::vector<CubinKernel> read_cubin_kernels(std::string_view cubin);

/// The DT_NEEDED entries of an ELF64 executable or shared library (empty for a static one). Throws
/// InternalError when the image is not a well-formed ELF64 file.
std::vector<std::string> read_needed_libraries(std::string_view elf);

}  // namespace comfuse::runtime
