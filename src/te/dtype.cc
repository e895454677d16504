// Dtype names, sizes and rounding; bf16 and f16 rounding through Eigen's round-to-nearest-even types.
#include "te/dtype.h"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace comfuse::te {
namespace {

// `value` rounded to float with round-to-odd: exact when representable, else the neighbour towards zero
// with its last mantissa bit set. Rounding that to a format at least two bits narrower (f16, bf16) gives
// the correctly rounded `value`; a plain float cast would round twice, and a double just above a tie of
// the narrow format could land on the tie and then round down.
float round_to_odd_float(double value) {
  if (std::isnan(value)) return std::numeric_limits<float>::quiet_NaN();
  if (std::abs(value) > std::numeric_limits<float>::max()) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    return value > 0 ? kInf : -kInf;
  }
  float f = static_cast<float>(value);
  if (static_cast<double>(f) == value) return f;
  if (std::abs(static_cast<double>(f)) > std::abs(value)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::boolean}) {
    if (dtype_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

int dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::boolean:
      return 1;
  }
  return 0;
}

bool is_float(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      return true;
    case DType::i32:
    case DType::boolean:
      return false;
  }
  return false;
}

double round_to_dtype(double value, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return static_cast<double>(static_cast<float>(value));
    case DType::f16:
      return static_cast<double>(static_cast<float>(Eigen::half(round_to_odd_float(value))));
    case DType::bf16:
      return static_cast<double>(static_cast<float>(Eigen::bfloat16(round_to_odd_float(value))));
    case DType::i32:
      if (std::isnan(value)) return 0.0;
      return std::clamp(std::trunc(value), -2147483648.0, 2147483647.0);
    case DType::boolean:
      return value != 0.0 ? 1.0 : 0.0;
  }
  return value;
}

}  // namespace comfuse::te
