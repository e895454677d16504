// Element types of tensors and expressions, and the rounding the GPU applies when it stores them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace comfuse::te {

/// Element types. `boolean` is the type of comparisons only; tensors never hold it.
/// Room is left for fp8 (e4m3, e5m2) as further enumerators.
enum class DType : std::uint8_t { f32, f16, bf16, i32, boolean };

/// Name as written in programs and JSON: "f32", "f16", "bf16", "i32", "bool".
std::string_view dtype_name(DType dtype);

/// The dtype called `name`, or nothing when no dtype has that name.
std::optional<DType> parse_dtype(std::string_view name);

/// Storage size in bytes (1 for boolean).
int dtype_bytes(DType dtype);

bool is_float(DType dtype);

/// `value` rounded to the nearest value representable in `dtype`, ties to even, as the GPU's
/// cvt.rn instructions do (rounded once, straight from the double). Magnitudes beyond the largest finite
/// value become infinities; NaN stays NaN. i32 truncates towards zero and saturates at the i32 range, NaN
/// giving 0, as cvt.rzi.s32.f32 does; bool gives 1 for anything non-zero (NaN included).
double round_to_dtype(double value, DType dtype);

}  // namespace comfuse::te
