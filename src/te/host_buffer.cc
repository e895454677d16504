// Host buffers: element encoding per dtype, rounding on store, and the deterministic random fill.
#include "te/host_buffer.h"

#include "te/printer.h"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>

#include "support/error.h"

namespace comfuse::te {
namespace {

std::int64_t checked_numel(const std::vector<std::int64_t>& shape, DType dtype) {
  std::int64_t numel = 1;
  for (std::int64_t extent : shape) {
    if (extent < 0)
      throw CompileError("host buffer of shape " + type_to_string(dtype, shape) + " has a negative extent");
    numel *= extent;
  }
  return numel;
}

std::int32_t to_i32(double value) {
  if (std::isnan(value)) return 0;
  const double t = std::trunc(value);
  if (t <= std::numeric_limits<std::int32_t>::min()) return std::numeric_limits<std::int32_t>::min();
  if (t >= std::numeric_limits<std::int32_t>::max()) return std::numeric_limits<std::int32_t>::max();
  return static_cast<std::int32_t>(t);
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

HostBuffer::HostBuffer(DType dtype, std::vector<std::int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(checked_numel(shape_, dtype)) {
  bytes_.assign(static_cast<std::size_t>(numel_) * static_cast<std::size_t>(dtype_bytes(dtype_)), 0);
}

HostBuffer HostBuffer::random(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed, double lo,
                              double hi) {
  HostBuffer buffer(dtype, std::move(shape));
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < buffer.numel_; ++i) {
    // The top 53 bits give a uniform double in [0, 1) exactly.
    const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    buffer.set(i, lo + (hi - lo) * u);
  }
  return buffer;
}

double HostBuffer::get(std::int64_t flat) const {
  COMFUSE_CHECK(flat >= 0 && flat < numel_,
                "host buffer index " + std::to_string(flat) + " outside " + type_string());
  const unsigned char* p = bytes_.data() + flat * dtype_bytes(dtype_);
  switch (dtype_) {
    case DType::f32:
      return load<float>(p);
    case DType::f16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(load<std::uint16_t>(p)));
    case DType::bf16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(load<std::uint16_t>(p)));
    case DType::i32:
      return load<std::int32_t>(p);
    case DType::boolean:
      return *p != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

void HostBuffer::set(std::int64_t flat, double value) {
  COMFUSE_CHECK(flat >= 0 && flat < numel_,
                "host buffer index " + std::to_string(flat) + " outside " + type_string());
  unsigned char* p = bytes_.data() + flat * dtype_bytes(dtype_);
  switch (dtype_) {
    case DType::f32:
      store(p, static_cast<float>(value));
      return;
    case DType::f16: {
      // round_to_dtype rounds once from double; the float it returns converts exactly.
      const auto h = Eigen::half(static_cast<float>(round_to_dtype(value, DType::f16)));
      store(p, Eigen::numext::bit_cast<std::uint16_t>(h));
      return;
    }
    case DType::bf16: {
      const auto b = Eigen::bfloat16(static_cast<float>(round_to_dtype(value, DType::bf16)));
      store(p, Eigen::numext::bit_cast<std::uint16_t>(b));
      return;
    }
    case DType::i32:
      store(p, to_i32(value));
      return;
    case DType::boolean:
      *p = value != 0.0 ? 1 : 0;
      return;
  }
}

void HostBuffer::fill(double value) {
  if (numel_ == 0) return;
  set(0, value);
  const std::size_t width = static_cast<std::size_t>(dtype_bytes(dtype_));
  for (std::size_t offset = width; offset < bytes_.size(); offset += width) {
    std::memcpy(bytes_.data() + offset, bytes_.data(), width);
  }
}

std::string HostBuffer::type_string() const {
  return type_to_string(dtype_, shape_);
}

}  // namespace comfuse::te
