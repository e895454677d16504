// Dtype names, sizes, classification and the rounding that storage in each dtype applies.
#include "te/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace comfuse::te {
namespace {

constexpr DType kAll[] = {DType::f32, DType::f16, DType::bf16, DType::i32, DType::boolean};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(DType, NamesAreTheSpelledOnes) {
  EXPECT_EQ(dtype_name(DType::f32), "f32");
  EXPECT_EQ(dtype_name(DType::f16), "f16");
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
  EXPECT_EQ(dtype_name(DType::i32), "i32");
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
}

TEST(DType, ParseRoundTripsEveryName) {
  for (DType dtype : kAll) {
    const auto parsed = parse_dtype(dtype_name(dtype));
    ASSERT_TRUE(parsed.has_value()) << dtype_name(dtype);
    EXPECT_EQ(*parsed, dtype);
  }
}

TEST(DType, ParseRejectsUnknownAndMisspelledNames) {
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_FALSE(parse_dtype("F32").has_value());
  EXPECT_FALSE(parse_dtype("float32").has_value());
  EXPECT_FALSE(parse_dtype("boolean").has_value());
  EXPECT_FALSE(parse_dtype("f32 ").has_value());
  EXPECT_FALSE(parse_dtype("fp8").has_value());
}

TEST(DType, Bytes) {
  EXPECT_EQ(dtype_bytes(DType::f32), 4);
  EXPECT_EQ(dtype_bytes(DType::f16), 2);
  EXPECT_EQ(dtype_bytes(DType::bf16), 2);
  EXPECT_EQ(dtype_bytes(DType::i32), 4);
  EXPECT_EQ(dtype_bytes(DType::boolean), 1);
}

TEST(DType, IsFloat) {
  EXPECT_TRUE(is_float(DType::f32));
  EXPECT_TRUE(is_float(DType::f16));
  EXPECT_TRUE(is_float(DType::bf16));
  EXPECT_FALSE(is_float(DType::i32));
  EXPECT_FALSE(is_float(DType::boolean));
}

// bf16 keeps 8 significant bits: next to 1.0 the spacing is 2^-7.
TEST(RoundToDType, Bf16TiesGoToEven) {
  const double ulp = std::ldexp(1.0, -7);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2, DType::bf16), 1.0);  // tie between 1 (even) and 1+ulp
  EXPECT_EQ(round_to_dtype(1.0 + 3 * ulp / 2, DType::bf16),
            1.0 + 2 * ulp);  // tie between 1+ulp and 1+2ulp (even)
  EXPECT_EQ(round_to_dtype(-(1.0 + ulp / 2), DType::bf16), -1.0);
  EXPECT_EQ(round_to_dtype(1.0 + ulp, DType::bf16), 1.0 + ulp);  // representable: unchanged
}

TEST(RoundToDType, Bf16RoundsToNearestOffTies) {
  const double ulp = std::ldexp(1.0, -7);
  EXPECT_EQ(round_to_dtype(1.0 + 0.49 * ulp, DType::bf16), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + 0.51 * ulp, DType::bf16), 1.0 + ulp);
  EXPECT_EQ(round_to_dtype(0.1, DType::bf16), 0.10009765625);
  EXPECT_EQ(round_to_dtype(3.14159, DType::bf16), 3.140625);
}

// A double a hair above a bf16 tie must round up. Converting to float first lands exactly on the tie (the
// hair is below float precision) and would round to even, down: the value is rounded once, from the double.
TEST(RoundToDType, Bf16RoundsOnceFromDouble) {
  const double ulp = std::ldexp(1.0, -7);
  const double hair = std::ldexp(1.0, -30);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2 + hair, DType::bf16), 1.0 + ulp);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2 - hair, DType::bf16), 1.0);
  EXPECT_EQ(round_to_dtype(-(1.0 + ulp / 2 + hair), DType::bf16), -(1.0 + ulp));
}

TEST(RoundToDType, Bf16OverflowsToInfinityAndKeepsSpecials) {
  const double bf16_max = 3.3895313892515355e38;  // (2 - 2^-7) * 2^127
  EXPECT_EQ(round_to_dtype(bf16_max, DType::bf16), bf16_max);
  EXPECT_EQ(round_to_dtype(3.39e38, DType::bf16), bf16_max);  // below the tie with 2^128
  EXPECT_EQ(round_to_dtype(3.4e38, DType::bf16), kInf);       // above it
  EXPECT_EQ(round_to_dtype(-1e300, DType::bf16), -kInf);
  EXPECT_EQ(round_to_dtype(kInf, DType::bf16), kInf);
  EXPECT_TRUE(std::isnan(round_to_dtype(kNan, DType::bf16)));
  const double negative_zero = round_to_dtype(-0.0, DType::bf16);
  EXPECT_EQ(negative_zero, 0.0);
  EXPECT_TRUE(std::signbit(negative_zero));
}

TEST(RoundToDType, F16OverflowsToInfinity) {
  EXPECT_EQ(round_to_dtype(65504.0, DType::f16), 65504.0);  // the largest finite f16
  EXPECT_EQ(round_to_dtype(65519.0, DType::f16), 65504.0);  // below the tie with 65536
  EXPECT_EQ(round_to_dtype(65520.0, DType::f16), kInf);     // the tie rounds to even: infinity
  EXPECT_EQ(round_to_dtype(-65520.0, DType::f16), -kInf);
  EXPECT_EQ(round_to_dtype(1e6, DType::f16), kInf);
  EXPECT_EQ(round_to_dtype(1e300, DType::f16), kInf);
}

TEST(RoundToDType, F16TiesToEvenIncludingSubnormals) {
  const double ulp = std::ldexp(1.0, -10);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2, DType::f16), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + 3 * ulp / 2, DType::f16), 1.0 + 2 * ulp);
  EXPECT_EQ(round_to_dtype(0.1, DType::f16), 0.0999755859375);
  const double tiny = std::ldexp(1.0, -24);  // smallest f16 subnormal
  EXPECT_EQ(round_to_dtype(tiny, DType::f16), tiny);
  EXPECT_EQ(round_to_dtype(tiny / 2, DType::f16), 0.0);           // tie with 0 (even)
  EXPECT_EQ(round_to_dtype(3 * tiny / 2, DType::f16), 2 * tiny);  // tie between 1 and 2 subnormal ulps
}

TEST(RoundToDType, F16RoundsOnceFromDouble) {
  const double tiny = std::ldexp(1.0, -24);
  EXPECT_EQ(round_to_dtype(tiny / 2 * (1 + std::ldexp(1.0, -40)), DType::f16), tiny);
  const double ulp = std::ldexp(1.0, -10);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2 + std::ldexp(1.0, -40), DType::f16), 1.0 + ulp);
}

TEST(RoundToDType, F32RoundsToSinglePrecision) {
  EXPECT_EQ(round_to_dtype(0.1, DType::f32), 0.100000001490116119384765625);
  const double ulp = std::ldexp(1.0, -23);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2, DType::f32), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + 3 * ulp / 2, DType::f32), 1.0 + 2 * ulp);
  EXPECT_EQ(round_to_dtype(1.0 + ulp / 2 + std::ldexp(1.0, -40), DType::f32), 1.0 + ulp);
  EXPECT_EQ(round_to_dtype(16777217.0, DType::f32), 16777216.0);
  EXPECT_EQ(round_to_dtype(kInf, DType::f32), kInf);
  EXPECT_TRUE(std::isnan(round_to_dtype(kNan, DType::f32)));
}

TEST(RoundToDType, I32TruncatesTowardsZero) {
  EXPECT_EQ(round_to_dtype(2.7, DType::i32), 2.0);
  EXPECT_EQ(round_to_dtype(-2.7, DType::i32), -2.0);
  EXPECT_EQ(round_to_dtype(0.999, DType::i32), 0.0);
  EXPECT_EQ(round_to_dtype(-7.0, DType::i32), -7.0);
  EXPECT_EQ(round_to_dtype(2147483647.9, DType::i32), 2147483647.0);
}

TEST(RoundToDType, I32SaturatesAndMapsNanToZero) {
  EXPECT_EQ(round_to_dtype(1e10, DType::i32), 2147483647.0);
  EXPECT_EQ(round_to_dtype(-1e10, DType::i32), -2147483648.0);
  EXPECT_EQ(round_to_dtype(kInf, DType::i32), 2147483647.0);
  EXPECT_EQ(round_to_dtype(-kInf, DType::i32), -2147483648.0);
  EXPECT_EQ(round_to_dtype(kNan, DType::i32), 0.0);
}

TEST(RoundToDType, BoolIsOneForAnythingNonZero) {
  EXPECT_EQ(round_to_dtype(0.0, DType::boolean), 0.0);
  EXPECT_EQ(round_to_dtype(-0.0, DType::boolean), 0.0);
  EXPECT_EQ(round_to_dtype(2.5, DType::boolean), 1.0);
  EXPECT_EQ(round_to_dtype(-1e-30, DType::boolean), 1.0);
  EXPECT_EQ(round_to_dtype(kNan, DType::boolean), 1.0);
}

TEST(RoundToDType, IsIdempotent) {
  for (DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
    for (double value : {0.1, -3.7, 1234.5678, 1e-6, 70000.0}) {
      const double once = round_to_dtype(value, dtype);
      EXPECT_EQ(round_to_dtype(once, dtype), once) << dtype_name(dtype) << " " << value;
    }
  }
}

}  // namespace
}  // namespace comfuse::te
