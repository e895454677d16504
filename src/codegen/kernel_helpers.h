// Device helpers that the fused kernel's knobs add to its source (emitted only into kernels that use them, so
// that a kernel's text depends only on its own knobs).
#pragma once

#include "codegen/code_stream.h"

namespace comfuse::codegen {

/// multicast_b: a B box loaded into every CTA of the cluster, and a stage released here and in the peer.
void emit_multicast_helpers(CodeStream& out);
/// stash_evict_last: the stash's element and pair stores with an L2 evict_last policy, or (`by_tma`, the
/// stash stored from the staged slot) its TMA box store with that policy.
void emit_stash_keep_helpers(CodeStream& out, bool by_tma);
/// streaming_hints: the L2 evict_first policy and a TMA box load that carries it.
void emit_streaming_helpers(CodeStream& out);
/// tma_store: the staging layout (whole tile, or `in_chunks` two 64-column boxes), the bulk store and its
/// waits, and the warpgroups' named barriers.
void emit_tma_store_helpers(CodeStream& out, bool in_chunks);
/// packed_rounding's device helpers: round_bf16_packed and round_f16_packed.
void emit_packed_rounding_helpers(CodeStream& out);
/// prefetch_inputs: a bulk prefetch into L2.
void emit_prefetch_helper(CodeStream& out);
/// global_exchange: the acquiring load that polls a round counter, and a warpgroup's own named barrier.
void emit_global_exchange_helpers(CodeStream& out);

}  // namespace comfuse::codegen
