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

// A kernel record of `us` microseconds starting at `start_us`, tagged with run `tag` (0: untagged).
KernelRecord kernel(double start_us, double us, std::uint64_t tag) {
  KernelRecord r;
  r.start_ns = static_cast<std::uint64_t>(start_us * 1000);
  r.end_ns = r.start_ns + static_cast<std::uint64_t>(us * 1000);
  r.tag = tag;
  return r;
}

TEST(Timing, ARunsSampleIsItsKernelsAndEachKernelHasItsOwnMedian) {
  // Three runs of a main kernel and a finish kernel; a record of an untimed launch (tag 0) is ignored.
  const Timing timing =
      summarize_runs({kernel(0, 10, 1), kernel(11, 4, 1), kernel(20, 12, 2), kernel(33, 5, 2),
                      kernel(40, 7, 0), kernel(50, 11, 3), kernel(62, 3, 3)},
                     3);
  EXPECT_EQ(timing.samples_us, (std::vector<double>{14.0, 17.0, 14.0}));
  EXPECT_DOUBLE_EQ(timing.median_us, 14.0);
  EXPECT_EQ(timing.kernel_median_us, (std::vector<double>{11.0, 4.0}));
}

TEST(Timing, UntaggedRecordsSplitIntoEqualRunsInStartOrder) {
  const Timing timing =
      summarize_runs({kernel(0, 10, 0), kernel(11, 2, 0), kernel(20, 30, 0), kernel(51, 6, 0)}, 2);
  EXPECT_EQ(timing.samples_us, (std::vector<double>{12.0, 36.0}));
  EXPECT_EQ(timing.kernel_median_us, (std::vector<double>{20.0, 4.0}));
}

TEST(Timing, RunsOfDifferentKernelCountsHaveNoPerKernelMedians) {
  const Timing timing = summarize_runs({kernel(0, 10, 1), kernel(11, 2, 1), kernel(20, 9, 2)}, 2);
  EXPECT_EQ(timing.samples_us, (std::vector<double>{12.0, 9.0}));
  EXPECT_TRUE(timing.kernel_median_us.empty());
}

TEST(Timing, ARunWithoutAKernelNamesTheRun) {
  try {
    summarize_runs({kernel(0, 10, 1), kernel(20, 9, 3)}, 3);
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("timed run 2 of 3 has no kernel record (2 records collected)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace comfuse::runtime
