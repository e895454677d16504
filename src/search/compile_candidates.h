// Compiling a batch of tuning candidates on all cores: shared by the fused-GEMM and the back-to-back tuners.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/kernel_cache.h"
#include "search/tuner.h"

namespace comfuse::search {

/// Compiles each candidate's `kernel` into its `compiled` (or its error into `error`) on options.jobs threads
/// (every core when 0), with options.compile or else the on-disk kernel cache. Candidates that already have
/// an error are skipped, and so is every candidate past the first `always` not yet started once `stop()`
/// holds. `Candidate` has the fields `codegen::KernelSource kernel`, `std::optional<runtime::CompiledProgram>
/// compiled` and `std::string error`.
template <typename Candidate>
void compile_candidates(
    std::vector<Candidate>& candidates, const TuneOptions& options,
    const std::function<bool()>& stop = [] { return false; }, std::size_t always = 0) {
  const runtime::KernelCache cache;
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < candidates.size(); i = next++) {
      Candidate& c = candidates[i];
      if (!c.error.empty() || (i >= always && stop())) continue;
      try {
        if (options.compile) {
          c.compiled = options.compile(c.kernel);
        } else {
          runtime::CompileOptions compile_options;
          compile_options.program_name = c.kernel.name + ".cu";
          c.compiled = cache.compile(c.kernel.source, compile_options);
        }
      } catch (const std::exception& error) {
        c.error = error.what();
      }
    }
  };
  const int jobs =
      options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (int t = 1; t < std::min<int>(jobs, static_cast<int>(candidates.size())); ++t)
    threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

}  // namespace comfuse::search
