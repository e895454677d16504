// resident_finish: a deferred reduction's finish run inside the main kernel (Schedule::resident_finish). The
// producer warpgroup's warps 1-3 (which stream nothing) from the start, and every consumer warp once its
// tiles are done, draw items of ITEM_ROWS rows from a queue in the workspace; an item waits until its row
// block's ready word counts every tile of the block (raised by the consumer warpgroups once the tile's stash
// and partials are complete), then runs the finish kernel's row code (EpilogueEmitter::finish_row) on each
// row. Both words return to zero within the launch: the queue's last draw zeroes the queue, and the last item
// of a row block to pass its wait zeroes the block's word, so a workspace zeroed once when bound serves every
// launch.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "codegen/code_stream.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"
#include "te/tensor.h"

namespace comfuse::codegen {

/// Rows a queue item holds (BM is a multiple of it).
inline constexpr int kResidentItemRows = 8;

/// The workspace bytes of the ready words (one a row block) and the queue word, to a 16-byte boundary.
std::int64_t resident_finish_bytes(std::int64_t m_blocks);

/// The constants: the words' offset in the workspace `offset`, the raises a row block needs, the items and
/// the warps of a CTA that draw them.
void emit_resident_finish_constants(CodeStream& out, const schedule::Schedule& s, std::int64_t offset);

/// The device helpers: the acquiring poll of a ready word, the releasing raise, the consumer warpgroup's
/// barrier before it, and the queue's draw.
void emit_resident_finish_helpers(CodeStream& out);

/// The lambda `finish_rows`, at kernel scope before the warp roles: the calling warp draws items until the
/// queue is spent and finishes their rows.
void emit_finish_rows_lambda(CodeStream& out, const schedule::FusionPlan& plan, const schedule::Schedule& s,
                             const std::map<const te::TensorNode*, std::string>& param_names);

/// A consumer warpgroup raises row block `block`'s ready word for a tile whose stash and partials it wrote
/// (with tma_store, after its stores completed). Expects `consumer` and `ready_words` in scope.
void emit_tile_ready(CodeStream& out, const schedule::Schedule& s, const std::string& block);

}  // namespace comfuse::codegen
