// Dtype names, sizes and rounding; bf16 and f16 rounding through Eigen's round-to-nearest-even types.
#include "te/dtype.h"

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace comfuse::te {
namespace {

// `value` as a float rounded to odd: exact values stay, inexact ones take whichever neighbour has an odd last
// bit. Rounding that float to nearest-even in a format at least two significand bits narrower gives the
// correctly rounded result; going through a float rounded to nearest could land exactly on a tie and break it
// the wrong way (1 + 2^-8 + 2^-40 would become 1 in bf16 instead of 1 + 2^-7).
float round_to_odd_float(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(f) == value) return f;
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 1u) == 0) {
    const float towards = static_cast<double>(f) > value ? -INFINITY : INFINITY;
    f = std::nextafter(f, towards);
  }
  return f;
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::boolean: return "bool";
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
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::boolean: return 1;
  }
  return 0;
}

bool is_float(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return true;
    case DType::i32:
    case DType::boolean: return false;
  }
  return false;
}

double round_to_dtype(double value, DType dtype) {
  switch (dtype) {
    case DType::f32: return static_cast<double>(static_cast<float>(value));
    case DType::f16: return static_cast<double>(static_cast<float>(Eigen::half(round_to_odd_float(value))));
    case DType::bf16: return static_cast<double>(static_cast<float>(Eigen::bfloat16(round_to_odd_float(value))));
    case DType::i32: return std::isfinite(value) ? std::trunc(value) : 0.0;
    case DType::boolean: return value != 0.0 ? 1.0 : 0.0;
  }
  return value;
}

}  // namespace comfuse::te
