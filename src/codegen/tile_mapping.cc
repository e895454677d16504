// The device-side tile walk of a fused kernel (tile_mapping.h).
#include "codegen/tile_mapping.h"

#include <string>

namespace comfuse::codegen {
namespace {

using schedule::Schedule;
using schedule::WarpRoles;

class TileMappingEmitter {
 public:
  TileMappingEmitter(const Schedule& s, bool row_blocks, bool reduces_in_kernel)
      : s_(s), row_blocks_(row_blocks), reduces_in_kernel_(reduces_in_kernel) {}

  void emit(CodeStream& out) const {
    if (row_blocks_) {
      out.line(
          "// The cluster's row blocks (every gridDim.x / CLUSTER_N-th) and, in each, the CTA's column "
          "tiles:");
      out.line("// the same sequence for the producer and every consumer warpgroup.");
      tile_sequence_struct(out, "int first_block, block_stride, first_tile, count, stride;");
      out.open("__device__ __forceinline__ TileSequence cta_tiles(u32 cta_rank)");
      out.line("TileSequence seq;");
      out.line("seq.first_block = blockIdx.x / CLUSTER_N;");
      out.line("seq.block_stride = gridDim.x / CLUSTER_N;");
      cluster_column_tiles(out);
      out.line("return seq;");
      out.close();
      out.line();
      return;
    }
    if (s_.persistent) {
      strided(out);
      return;
    }
    out.line("// The CTA's tiles: the same sequence for the producer and every consumer warpgroup.");
    tile_sequence_struct(out, "int m_block, first_tile, count, stride;");
    raster_function(out);
    out.open("__device__ __forceinline__ TileSequence cta_tiles(u32 cta_rank)");
    out.line("TileSequence seq;");
    if (reduces_in_kernel_) {
      out.line("// The cluster owns BM whole rows; its CTAs take every CLUSTER_N-th column tile.");
      out.line("seq.m_block = blockIdx.x / CLUSTER_N;");
      cluster_column_tiles(out);
    } else if (s_.warp_roles == WarpRoles::kPingPong) {
      out.line("// Two neighbouring column tiles of one row block, one per consumer warpgroup.");
      out.line("int pair;");
      raster_cta(out, "(N_TILES + 1) / 2", "pair");
      out.line("seq.first_tile = 2 * pair;");
      out.line("seq.stride = 1;");
      out.line("seq.count = min(2, N_TILES - 2 * pair);");
    } else {
      out.line("int n_tile;");
      raster_cta(out, "N_TILES", "n_tile");
      out.line("seq.first_tile = n_tile;");
      out.line("seq.stride = 1;");
      out.line("seq.count = 1;");
    }
    out.line("return seq;");
    out.close();
    out.line();
  }

 private:
  // The device struct of a CTA's tile sequence: `fields`, and n_tile(t) of its column tiles.
  void tile_sequence_struct(CodeStream& out, const std::string& fields) const {
    out.open("struct TileSequence");
    out.line(fields);
    out.open("__device__ __forceinline__ int n_tile(int t) const");
    out.line("return first_tile + t * stride;");
    out.close();
    out.close(";");
  }

  // Reduction plans: the CTA of rank r in its cluster takes the column tiles r, r + CLUSTER_N, ...
  void cluster_column_tiles(CodeStream& out) const {
    out.line("seq.first_tile = cta_rank;");
    out.line("seq.stride = CLUSTER_N;");
    out.line("seq.count = (N_TILES - (int)cta_rank + CLUSTER_N - 1) / CLUSTER_N;");
  }

  // The one-launch grid: this CTA's row block (seq.m_block) and `column` of `columns`, from its place in the
  // rasterised order, or with multicast_b from its cluster's place and its rank in the pair. When M_BLOCKS is
  // odd the last pair has one row block, and its second CTA takes that block too: its loads stay in the
  // matrix and its writes are the same values as its peer's.
  void raster_cta(CodeStream& out, const std::string& columns, const std::string& column) const {
    if (s_.multicast_b) {
      out.line("int row_pair;");
      out.line("raster(blockIdx.x / 2, " + columns + ", row_pair, " + column + ");");
      out.line("seq.m_block = min(2 * row_pair + (int)cta_rank, M_BLOCKS - 1);");
    } else {
      out.line("raster(blockIdx.x, " + columns + ", seq.m_block, " + column + ");");
    }
  }

  // The persistent grid: CTA b takes the tiles b, b + gridDim.x, ... of the rasterised order, so that the
  // CTAs running at once share rows of A and columns of B in L2 as the one-tile grid's waves do. With
  // multicast_b, cluster c takes the pairs' tiles c, c + clusters, ...
  void strided(CodeStream& out) const {
    raster_function(out);
    out.line("// The CTA's tiles: the same sequence for the producer and every consumer warpgroup.");
    out.open("struct TileSequence");
    if (s_.multicast_b) {
      out.line("int first_tile, count, stride, rank;");
      out.open("__device__ __forceinline__ void at(int t, int& m_block, int& n_tile) const");
      out.line("int row_pair;");
      out.line("raster(first_tile + t * stride, N_TILES, row_pair, n_tile);");
      out.line("m_block = min(2 * row_pair + rank, M_BLOCKS - 1);  // a lone last row block: both CTAs");
    } else {
      out.line("int first_tile, count, stride;");
      out.open("__device__ __forceinline__ void at(int t, int& m_block, int& n_tile) const");
      out.line("raster(first_tile + t * stride, N_TILES, m_block, n_tile);");
    }
    out.close();
    out.close(";");
    if (s_.multicast_b) {
      out.open("__device__ __forceinline__ TileSequence cta_tiles(u32 cta_rank)");
      out.line("TileSequence seq;");
      out.line("seq.first_tile = blockIdx.x / 2;");
      out.line("seq.stride = gridDim.x / 2;");
      out.line("seq.count = (M_PAIRS * N_TILES - seq.first_tile + seq.stride - 1) / seq.stride;");
      out.line("seq.rank = (int)cta_rank;");
    } else {
      out.open("__device__ __forceinline__ TileSequence cta_tiles(u32)");
      out.line("TileSequence seq;");
      out.line("seq.first_tile = blockIdx.x;");
      out.line("seq.stride = gridDim.x;");
      out.line("seq.count = (M_BLOCKS * N_TILES - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;");
    }
    out.line("return seq;");
    out.close();
    out.line();
  }

  // Rasterisation over row blocks, or with multicast_b over the clusters' pairs of row blocks.
  void raster_function(CodeStream& out) const {
    const std::string rows = s_.multicast_b ? "M_PAIRS" : "M_BLOCKS";
    out.line(s_.multicast_b
                 ? "// Rasterisation: consecutive clusters walk GROUP_M pairs of row blocks before "
                   "moving right, so that they share B in L2."
                 : "// Rasterisation: consecutive CTAs walk GROUP_M row blocks before moving right, "
                   "so that they share B in L2.");
    out.open("__device__ __forceinline__ void raster(int linear, int columns, int& m_block, int& column)");
    out.line("const int group = linear / (GROUP_M * columns);");
    out.line("const int first_m = group * GROUP_M;");
    out.line("const int group_size = min(" + rows + " - first_m, GROUP_M);");
    out.line("m_block = first_m + (linear % (GROUP_M * columns)) % group_size;");
    out.line("column = (linear % (GROUP_M * columns)) / group_size;");
    out.close();
  }

  const Schedule& s_;
  const bool row_blocks_;
  const bool reduces_in_kernel_;
};

}  // namespace

void emit_tile_mapping(CodeStream& out, const Schedule& schedule, bool row_blocks, bool reduces_in_kernel) {
  TileMappingEmitter(schedule, row_blocks, reduces_in_kernel).emit(out);
}

}  // namespace comfuse::codegen
