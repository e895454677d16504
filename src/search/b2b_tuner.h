// Tuning the fused back-to-back kernel: its schedule space is small, so every schedule is compiled, checked
// and measured; the records join the same log as the fused-GEMM kernels' (their schedule says "kernel":
// "b2b").
#pragma once

#include "search/measurer.h"
#include "search/tuner.h"
#include "te/program.h"

namespace comfuse::search {

/// Tunes the fused back-to-back kernel of `program` on `measurer`'s device (whose runner measures B2B
/// candidates, e.g. make_b2b_gpu_measurer): every schedule of schedule::b2b_schedule_space, then the ones
/// within twice the tie band of the fastest again with `final_repeats` samples; the winner by select_best.
/// Uses options.repeats, final_repeats, jobs, log_path, compile, compile_options, progress and seconds (no
/// candidate starts after it); trials and exhaustive do not apply. Throws CompileError when the program is
/// not back to back or the fused kernel cannot be generated for it (the reason named), or when no candidate
/// ran correctly.
TuneResult tune_b2b(const te::Program& program, Measurer& measurer, const TuneOptions& options = {});

}  // namespace comfuse::search
