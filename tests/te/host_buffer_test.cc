// Host buffers: per-dtype encoding, nearest-even rounding on store, shapes, and the deterministic random
// fill.
#include "te/host_buffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "support/error.h"

namespace comfuse::te {
namespace {

std::uint16_t bits16(const HostBuffer& b, std::int64_t flat) {
  std::uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(b.data()) + 2 * flat, 2);
  return v;
}

double stored(DType dtype, double value) {
  HostBuffer b(dtype, {1});
  b.set(0, value);
  return b.get(0);
}

TEST(HostBuffer, Bf16RoundsToNearestEven) {
  EXPECT_EQ(stored(DType::bf16, 1.0 + 0x1p-8), 1.0);               // tie: 1.0 has the even last bit
  EXPECT_EQ(stored(DType::bf16, 1.0 + 3 * 0x1p-8), 1.0 + 0x1p-6);  // tie: rounds up to the even neighbour
  EXPECT_EQ(stored(DType::bf16, 1.0 + 0x1p-8 + 0x1p-20), 1.0 + 0x1p-7);  // above the tie
  // Just above a tie by less than a float ulp: one rounding from double, not two (double -> float -> bf16
  // would land on the tie and go to 1.0).
  EXPECT_EQ(stored(DType::bf16, 1.0 + 0x1p-8 + 0x1p-40), 1.0 + 0x1p-7);
  EXPECT_EQ(stored(DType::bf16, -(1.0 + 0x1p-8 + 0x1p-40)), -(1.0 + 0x1p-7));
  EXPECT_EQ(stored(DType::bf16, 3.4e38), std::numeric_limits<double>::infinity());  // max is 3.39e38
  EXPECT_TRUE(std::isnan(stored(DType::bf16, std::numeric_limits<double>::quiet_NaN())));
  // Subnormals: the smallest bf16 subnormal is 2^-133; half of it is a tie that goes to zero.
  EXPECT_EQ(stored(DType::bf16, 0x1p-133), 0x1p-133);
  EXPECT_EQ(stored(DType::bf16, 0x1p-134), 0.0);
  EXPECT_EQ(stored(DType::bf16, 0x1.8p-134), 0x1p-133);

  HostBuffer b(DType::bf16, {3});
  b.set(0, 1.0);
  b.set(1, -2.0);
  b.set(2, 1.0 + 0x1p-7);
  EXPECT_EQ(bits16(b, 0), 0x3F80);
  EXPECT_EQ(bits16(b, 1), 0xC000);
  EXPECT_EQ(bits16(b, 2), 0x3F81);
  EXPECT_EQ(b.size_bytes(), 6u);
}

TEST(HostBuffer, F16RoundsToNearestEven) {
  EXPECT_EQ(stored(DType::f16, 65504.0), 65504.0);
  EXPECT_EQ(stored(DType::f16, 65519.0), 65504.0);
  EXPECT_EQ(stored(DType::f16, 65520.0), std::numeric_limits<double>::infinity());  // tie goes to inf
  EXPECT_EQ(stored(DType::f16, -65520.0), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(stored(DType::f16, 1.0 + 0x1p-11), 1.0);
  EXPECT_EQ(stored(DType::f16, 1.0 + 3 * 0x1p-11), 1.0 + 0x1p-9);
  EXPECT_TRUE(std::isnan(stored(DType::f16, std::nan(""))));
  // Subnormals: the smallest f16 subnormal is 2^-24.
  EXPECT_EQ(stored(DType::f16, 0x1p-24), 0x1p-24);
  EXPECT_EQ(stored(DType::f16, 0x1p-25), 0.0);
  EXPECT_EQ(stored(DType::f16, 0x1.8p-25), 0x1p-24);
  EXPECT_EQ(stored(DType::f16, 3 * 0x1p-24), 3 * 0x1p-24);

  HostBuffer b(DType::f16, {2});
  b.set(0, 1.0);
  b.set(1, -0.5);
  EXPECT_EQ(bits16(b, 0), 0x3C00);
  EXPECT_EQ(bits16(b, 1), 0xB800);
}

TEST(HostBuffer, F32AndI32) {
  EXPECT_EQ(stored(DType::f32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(stored(DType::f32, 1.0 + 0x1p-24), 1.0);
  EXPECT_EQ(stored(DType::f32, 1e39), std::numeric_limits<double>::infinity());
  EXPECT_EQ(stored(DType::i32, 3.7), 3.0);
  EXPECT_EQ(stored(DType::i32, -3.7), -3.0);
  EXPECT_EQ(stored(DType::i32, 1e12), 2147483647.0);
  EXPECT_EQ(stored(DType::i32, -1e12), -2147483648.0);
  EXPECT_EQ(stored(DType::i32, std::nan("")), 0.0);
  HostBuffer b(DType::i32, {2});
  b.set(1, -5);
  std::int32_t raw[2];
  std::memcpy(raw, b.data(), sizeof raw);
  EXPECT_EQ(raw[0], 0);
  EXPECT_EQ(raw[1], -5);
}

TEST(HostBuffer, ShapesAndFill) {
  HostBuffer b(DType::bf16, {3, 4, 5});
  EXPECT_EQ(b.numel(), 60);
  EXPECT_EQ(b.size_bytes(), 120u);
  EXPECT_EQ(b.shape(), (std::vector<std::int64_t>{3, 4, 5}));
  EXPECT_EQ(b.type_string(), "bf16[3, 4, 5]");
  for (std::int64_t e = 0; e < b.numel(); ++e) EXPECT_EQ(b.get(e), 0.0);
  b.fill(std::nan(""));
  for (std::int64_t e = 0; e < b.numel(); ++e) EXPECT_TRUE(std::isnan(b.get(e)));
  b.fill(1.0 + 0x1p-7);
  EXPECT_EQ(b.get(59), 1.0 + 0x1p-7);

  EXPECT_EQ(HostBuffer(DType::f32, {}).numel(), 1);
  EXPECT_EQ(HostBuffer(DType::f32, {4, 0}).numel(), 0);
  EXPECT_EQ(HostBuffer(DType::f32, {4, 0}).size_bytes(), 0u);
  EXPECT_EQ(HostBuffer(DType::i32, {7}).size_bytes(), 28u);
}

TEST(HostBuffer, OutOfRangeElementIsAnInternalError) {
  HostBuffer b(DType::f32, {2, 3});
  EXPECT_THROW(b.get(6), InternalError);
  EXPECT_THROW(b.set(-1, 0.0), InternalError);
}

TEST(HostBuffer, RandomIsDeterministicAndPinned) {
  const HostBuffer a = HostBuffer::random(DType::f32, {4}, /*seed=*/1);
  // Pinned: a change of platform, compiler or generator must not change these.
  EXPECT_EQ(a.get(0), 0x1.10a2dep-3);
  EXPECT_EQ(a.get(1), 0x1.f75c6ep-2);
  EXPECT_EQ(a.get(2), 0x1.e24e8cp-1);
  EXPECT_EQ(a.get(3), -0x1.c7cf2ep-4);

  const HostBuffer x = HostBuffer::random(DType::bf16, {37, 29}, /*seed=*/7, /*lo=*/-2, /*hi=*/3);
  const HostBuffer y = HostBuffer::random(DType::bf16, {37, 29}, /*seed=*/7, /*lo=*/-2, /*hi=*/3);
  const HostBuffer z = HostBuffer::random(DType::bf16, {37, 29}, /*seed=*/8, /*lo=*/-2, /*hi=*/3);
  ASSERT_EQ(x.size_bytes(), y.size_bytes());
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size_bytes()), 0);
  EXPECT_NE(std::memcmp(x.data(), z.data(), x.size_bytes()), 0);
  double lo = 1e9, hi = -1e9;
  for (std::int64_t e = 0; e < x.numel(); ++e) {
    lo = std::min(lo, x.get(e));
    hi = std::max(hi, x.get(e));
  }
  EXPECT_GE(lo, -2.0);
  EXPECT_LE(hi, 3.0);  // bf16 rounding may reach the upper bound
  EXPECT_LT(lo, -1.5);
  EXPECT_GT(hi, 2.5);

  const HostBuffer ints = HostBuffer::random(DType::i32, {100}, /*seed=*/3, /*lo=*/0, /*hi=*/10);
  for (std::int64_t e = 0; e < ints.numel(); ++e) {
    EXPECT_GE(ints.get(e), 0.0);
    EXPECT_LT(ints.get(e), 10.0);
    EXPECT_EQ(ints.get(e), std::trunc(ints.get(e)));
  }
}

}  // namespace
}  // namespace comfuse::te
