// Which tiles a CTA of the fused kernel takes, and in what order: the device struct TileSequence and
// cta_tiles(cta_rank), emitted into the kernel source. The producer and every consumer warpgroup walk the
// same sequence, so that the t-th stage load is the t-th tile's.
//
// The walks:
// - row blocks (persistent with reductions combined in the kernel): a cluster takes every (gridDim.x /
//   CLUSTER_N)-th row block, its CTA of rank r the column tiles r, r + CLUSTER_N, ... of each;
// - one row block (reductions in the kernel, one launch wave): the cluster's own row block, columns as above;
// - strided (persistent, no reductions in the kernel): CTA b takes the tiles b, b + gridDim.x, ... of the
//   rasterised order;
// - one tile, or with ping-pong two neighbouring column tiles, of the rasterised order.
// With multicast_b the strided and one-tile walks go by cluster: the two CTAs of a cluster take the
// neighbouring row blocks 2p and 2p + 1 of the same column tiles (the rasterised order is over the pairs p).
#pragma once

#include "codegen/code_stream.h"
#include "schedule/schedule.h"

namespace comfuse::codegen {

/// Emits the raster function, TileSequence and cta_tiles for `schedule`. `row_blocks`: persistent clusters
/// walk row blocks; `reduces_in_kernel`: the kernel combines row reductions (a cluster owns whole rows).
void emit_tile_mapping(CodeStream& out, const schedule::Schedule& schedule, bool row_blocks,
                       bool reduces_in_kernel);

}  // namespace comfuse::codegen
