// Timing summaries on the CPU: median, spread and the checks on options.
#include <gtest/gtest.h>

#include "runtime/kernel_timer.h"
#include "support/error.h"

namespace comfuse::runtime {
namespace {

TEST(Timing, SummaryOfAnOddCount) {
  const Timing timing = summarize({3.0, 1.0, 2.0});
  EXPECT_EQ(timing.samples_us, (std::vector<double>{3.0, 1.0, 2.0})) << "samples keep run order";
  EXPECT_DOUBLE_EQ(timing.median_us, 2.0);
  EXPECT_DOUBLE_EQ(timing.min_us, 1.0);
  EXPECT_DOUBLE_EQ(timing.max_us, 3.0);
  EXPECT_DOUBLE_EQ(timing.mean_us, 2.0);
  EXPECT_DOUBLE_EQ(timing.stddev_us, 1.0);
  EXPECT_DOUBLE_EQ(timing.cv, 0.5);
}

TEST(Timing, MedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(summarize({10.0, 1.0, 4.0, 2.0}).median_us, 3.0);
}

TEST(Timing, OneSampleHasNoSpread) {
  const Timing timing = summarize({5.0});
  EXPECT_DOUBLE_EQ(timing.median_us, 5.0);
  EXPECT_DOUBLE_EQ(timing.stddev_us, 0.0);
  EXPECT_DOUBLE_EQ(timing.cv, 0.0);
}

TEST(Timing, NoSamplesIsAnInternalError) {
  EXPECT_THROW(summarize({}), InternalError);
}

}  // namespace
}  // namespace comfuse::runtime
