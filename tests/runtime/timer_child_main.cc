// Helper for the GPU timing tests: measures the timed kernels in a fresh process and prints the medians.
//
// usage: runtime_timer_child <busy iterations for ~100 us> <busy iterations for ~1 ms>
// prints: COMFUSE_MEDIANS_US <busy short> <busy long> <copy> CV <cv short> <cv long> <cv copy>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "runtime/kernel_timer.h"
#include "runtime/timed_kernels.h"

int main(int argc, char** argv) {
  using namespace comfuse::runtime;
  if (argc != 3) {
    std::fprintf(stderr, "usage: runtime_timer_child <short iterations> <long iterations>\n");
    return 2;
  }
  const int short_iters = std::atoi(argv[1]);
  const int long_iters = std::atoi(argv[2]);
  try {
    Context context(0);
    test_kernels::TimedKernels kernels(context);
    Stream stream(context);
    KernelTimer timer(context, stream);
    const Timing short_busy =
        timer.measure([&](CUstream s) { kernels.busy(s, short_iters); }, {.repeats = 100});
    const Timing long_busy = timer.measure([&](CUstream s) { kernels.busy(s, long_iters); }, {.repeats = 50});
    const Timing copy = timer.measure([&](CUstream s) { kernels.copy(s); }, {.repeats = 100});
    std::printf("COMFUSE_MEDIANS_US %.4f %.4f %.4f CV %.5f %.5f %.5f\n", short_busy.median_us,
                long_busy.median_us, copy.median_us, short_busy.cv, long_busy.cv, copy.cv);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "runtime_timer_child: %s\n", error.what());
    return 1;
  }
}
