// A minimal fork-join loop over contiguous ranges with std::thread (Eigen's own threading would need OpenMP).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace comfuse::support {

/// The thread count that `requested` (0: hardware concurrency) means; at least 1.
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Calls body(begin, end) on `threads` contiguous, ordered slices of [0, count) in parallel. When slices
/// throw, the exception of the earliest slice is rethrown after all have finished, so a failure reports the
/// same first bad item whatever the thread count (provided each slice stops at its own first failure).
template <typename Body>
void parallel_for(std::int64_t count, int threads, const Body& body) {
  const std::int64_t workers = std::max<std::int64_t>(1, std::min<std::int64_t>(threads, count));
  if (workers == 1) {
    if (count > 0) body(std::int64_t{0}, count);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers));
  for (std::int64_t w = 0; w < workers; ++w) {
    const std::int64_t begin = count * w / workers, end = count * (w + 1) / workers;
    pool.emplace_back([&, w, begin, end] {
      try {
        body(begin, end);
      } catch (...) {
        errors[static_cast<std::size_t>(w)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

/// Calls body(i) for every i of [0, count), on every core (slices as parallel_for makes them).
template <typename Body>
void parallel_each(std::size_t count, const Body& body) {
  parallel_for(static_cast<std::int64_t>(count), resolve_threads(0),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i) body(static_cast<std::size_t>(i));
               });
}

}  // namespace comfuse::support
