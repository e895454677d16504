// What the code generator hands to the runtime: CUDA source plus everything needed to launch it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"

namespace comfuse::codegen {

/// One kernel parameter, in signature order.
struct KernelParam {
  enum class Kind : std::uint8_t {
    kTmaA,      // TMA descriptor of the anchor's A operand, box [BM rows, 64 columns]
    kTmaB,      // TMA descriptor of the anchor's B operand, box [BN rows, 64 columns]
    kInput,     // pointer to an epilogue input
    kOutput,    // pointer to a program output
    kStash,     // f32 workspace of stash_bytes for tiles carried across reductions (null when 0 bytes)
    kTmaOut,    // TMA descriptor of an output, box [box_rows, 64 columns], for the TMA-store epilogue
    kTmaIn,     // TMA descriptor of an epilogue input, box [box_rows, 64 columns], for tma_inputs (a
                // vector [N] is read as one row [1, N])
    kTmaStash,  // TMA descriptor of the bf16 stash as [M, N] (`tensor`: the carried tile), box [box_rows, 64
                // columns], for a deferred reduction's TMA-store epilogue
    kTrace,     // the phase trace's buffer (EmitOptions::phase_trace; layout in codegen/phase_trace.h)
  };
  Kind kind;
  te::Tensor tensor;  // the tensor behind the parameter (for kStash: undefined)
  int box_rows = 0;   // TMA parameters: rows of the box; 0: the schedule's BM (kTmaA) or BN (kTmaB)
};

struct LaunchConfig {
  int grid_x = 1;
  int block_x = 1;
  int cluster_x = 1;     // 1: no cluster launch
  int shared_bytes = 0;  // dynamic shared memory
  // grid_x counts tiles, or with row reductions row blocks x cluster_x; the launch runs min(grid_x,
  // ctas_per_multiprocessor x multiprocessors) CTAs, or with clusters as many whole clusters as the device
  // runs at once, each striding over the tiles (or walking the row blocks)
  bool persistent = false;
  bool row_blocks = false;          // grid_x counts row blocks (x cluster_x): the plan has row reductions
  int ctas_per_multiprocessor = 1;  // of a persistent launch: as many as fit an SM at once
  // global_exchange: groups of group_x consecutive CTAs (no hardware cluster) walk a row block together and
  // wait for each other, so the launch is cooperative (all CTAs resident, or it fails) and a persistent grid
  // keeps whole groups.
  int group_x = 1;
  bool cooperative = false;
  // A deferred reduction's finish kernel, launched after the main kernel on the same stream with the same
  // arguments (finish_grid_x = 0: none): plain CTAs of finish_block_x threads, no cluster, no dynamic shared
  // memory.
  int finish_grid_x = 0;
  int finish_block_x = 0;
  // persistent_finish: finish_grid_x is the most CTAs; the launch runs as many of them as the device holds at
  // once, and the kernel's warps walk the rows a grid apart.
  bool persistent_finish = false;
};

struct KernelSource {
  std::string name;         // the extern "C" entry point
  std::string finish_name;  // the finish kernel's entry point (a deferred reduction), or empty
  std::string source;       // complete, self-contained CUDA C++ for NVRTC
  LaunchConfig launch;
  std::vector<KernelParam> params;
  std::int64_t stash_bytes = 0;
  // The workspace (stash_bytes) starts zeroed when bound: global_exchange's round counters, which the kernel
  // leaves at zero again when it ends.
  bool zeroed_workspace = false;
  schedule::Schedule schedule;
  // The phase trace (EmitOptions::phase_trace): records a (CTA, warpgroup) slot holds, 0 when not traced.
  int trace_capacity = 0;
};

/// How a kernel is emitted beyond its schedule. Never logged: a kernel emitted with any option differs from
/// the one its schedule alone gives, and replay regenerates the latter.
struct EmitOptions {
  /// Timestamps at each warpgroup's phase boundaries into an extra kTrace parameter (codegen/phase_trace.h).
  bool phase_trace = false;
};

/// Emits the fused kernel for `plan` under `schedule` (which must pass check_legal). The source is a pure
/// function of (plan, schedule, workload_key): same inputs, same bytes. The header comment carries the key,
/// the schedule and the plan.
KernelSource emit_kernel(const schedule::FusionPlan& plan, const schedule::Schedule& schedule,
                         const std::string& workload_key, const EmitOptions& options = {});

}  // namespace comfuse::codegen
