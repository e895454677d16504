// Dense row-major host tensors stored in their dtype's bytes, exactly as a GPU buffer holds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "te/dtype.h"

namespace comfuse::te {

/// A dense row-major tensor in host memory. Elements are stored in the dtype's own encoding: f32 as float,
/// bf16 and f16 as their 16-bit patterns, i32 as int32, bool as one byte 0/1, so data() can be copied to or
/// from a device buffer unchanged. Values cross the interface as doubles; set() rounds to the dtype.
class HostBuffer {
 public:
  /// A zero-filled buffer. An empty shape holds one element (a scalar); a zero extent holds none.
  /// Throws CompileError naming the shape when an extent is negative.
  HostBuffer(DType dtype, std::vector<std::int64_t> shape);

  /// A buffer of values drawn uniformly from [lo, hi) and rounded to `dtype` (i32: truncated towards zero).
  /// The sequence depends only on `seed` and the element count: it comes from splitmix64 and IEEE double
  /// arithmetic, so it is the same on every platform and compiler.
  static HostBuffer random(DType dtype, std::vector<std::int64_t> shape, std::uint64_t seed, double lo = -1,
                           double hi = 1);

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::int64_t numel() const { return numel_; }

  /// Element `flat` (row-major position) as a double; exact for every dtype. Throws InternalError when
  /// `flat` is outside [0, numel()).
  double get(std::int64_t flat) const;
  /// Stores `value` rounded to the dtype: nearest-even for f32, bf16 and f16 (overflow gives inf, NaN stays
  /// NaN); i32 truncates towards zero and saturates, NaN gives 0; bool stores value != 0.
  void set(std::int64_t flat, double value);
  /// Sets every element to `value` rounded as set() does (e.g. NaN to poison an output before a run).
  void fill(double value);

  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  std::size_t size_bytes() const { return bytes_.size(); }

  /// Dtype and shape as written in messages: "bf16[4, 8]".
  std::string type_string() const;

 private:
  DType dtype_;
  std::vector<std::int64_t> shape_;
  std::int64_t numel_;
  std::vector<unsigned char> bytes_;
};

}  // namespace comfuse::te
