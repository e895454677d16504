// How the fused back-to-back kernel's CTAs walk their row blocks (the block's batch, first row and chunk
// count; the persistent CTAs' loop and their chunk count so far), and its producer warp, which loads X, the
// W1 ring and W2's buffers in that walk's order.
#pragma once

#include <string>

#include "codegen/code_stream.h"
#include "schedule/b2b_plan.h"
#include "schedule/b2b_schedule.h"

namespace comfuse::codegen {

class B2BWalk {
 public:
  B2BWalk(const schedule::B2BPlan& plan, const schedule::B2BSchedule& schedule) : plan_(plan), s_(schedule) {}

  /// Declares `batch`, `m0` (the block's first row in its batch) and `chunks` of the row block `index` (a C
  /// expression): under a causal mask the last row blocks first, and only the chunks the mask leaves.
  void block_mapping(CodeStream& out, const std::string& index) const;
  /// A persistent CTA's loop over its row blocks (`block`, `round`, `q`, `sx`); the caller closes it after
  /// adding the block's chunks to `q`.
  void open_block_loop(CodeStream& out) const;
  /// Chunk `chunk` of this block as a chunk of the CTA's whole walk (the same when not persistent).
  std::string walked(const std::string& chunk) const { return s_.persistent ? "(q + " + chunk + ")" : chunk; }
  /// The producer warpgroup (thread 0 issues every TMA load), at `registers` after setmaxnreg.
  void producer(CodeStream& out, int registers) const;

 private:
  const schedule::B2BPlan& plan_;
  const schedule::B2BSchedule& s_;
};

}  // namespace comfuse::codegen
