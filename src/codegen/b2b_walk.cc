// The fused back-to-back kernel's walk over row blocks and its producer warp.
#include "codegen/b2b_walk.h"

#include <optional>

#include "schedule/b2b_mask.h"

namespace comfuse::codegen {

// The batch, first row and chunk count of the row block `index` (a C expression).
void B2BWalk::block_mapping(CodeStream& out, const std::string& index) const {
  if (const std::optional<std::int64_t> diagonal = schedule::masked_above_diagonal(plan_)) {
    out.line(
        "// Under the mask the last row blocks walk the most chunks: they start first, every batch's at "
        "once.");
    out.line("const int batch = " + index + " % BATCH;");
    out.line("const int m0 = (M_BLOCKS - 1 - " + index +
             " / BATCH) * BM;  // first row of the block in its batch");
    out.line("// The mask removes chained column j > row + " + std::to_string(*diagonal) +
             ": chunks wholly above the block's last row add nothing and are skipped.");
    out.line("const int chunks = min(CHUNKS, max(0, m0 + BM - 1 + (" + std::to_string(*diagonal) +
             ")) / BN1 + 1);");
  } else {
    out.line("const int batch = " + index + " / M_BLOCKS;");
    out.line("const int m0 = (" + index + " % M_BLOCKS) * BM;  // first row of the block within its batch");
    out.line("const int chunks = CHUNKS;");
  }
}

// A persistent CTA's walk over its row blocks: `round` counts them (X's buffer and its barriers' phase),
// `q` the chunks of the blocks before (the W1 ring's and W2's buffers and phases run on across blocks).
void B2BWalk::open_block_loop(CodeStream& out) const {
  out.line("int q = 0, round = 0;");
  out.open("for (int block = blockIdx.x; block < BLOCKS; block += gridDim.x, ++round)");
  block_mapping(out, "block");
  out.line("u16* sx = sx_buf + (round & 1) * K_BLOCKS * BM * BK;");
}

void B2BWalk::producer(CodeStream& out, int registers) const {
  const bool w2_k_major = plan_.second.b_k_major;
  out.open("if (warpgroup == 0)");
  out.line(
      "// Producer: X's rows once; per chunk of BN1 chained columns, W1's rows by K blocks, then W2's "
      "part.");
  out.line("// Operands are 2-D views [BATCH * rows, columns]: a batch's rows start at batch * rows.");
  out.line("regs_decrease<" + std::to_string(registers) + ">();");
  out.open("if (threadIdx.x == 0)");
  out.line("tma_prefetch_descriptor(&tma_x);");
  out.line("tma_prefetch_descriptor(&tma_w1);");
  out.line("tma_prefetch_descriptor(&tma_w2);");
  std::string full_x = "full_x";
  if (s_.persistent) {
    open_block_loop(out);
    out.line("mbar_wait(&empty_x[round & 1], ((round >> 1) & 1) ^ 1);");
    full_x = "&full_x[round & 1]";
  }
  out.line("mbar_expect_tx(" + full_x + ", X_BYTES);");
  out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
  out.line("tma_load_2d(sx + kb * BM * BK, &tma_x, " + full_x + ", kb * BK, batch * M + m0);");
  out.close();
  out.open("for (int c = 0; c < chunks; ++c)");
  out.open("for (int kb = 0; kb < K_BLOCKS; ++kb)");
  out.line("const int it = " + walked("c") + " * K_BLOCKS + kb;");
  out.line("const int s = it % STAGES;");
  out.line("mbar_wait(&empty_a[s], ((it / STAGES) & 1) ^ 1);");
  out.line("mbar_expect_tx(&full_a[s], W1_BYTES);");
  out.line("tma_load_2d(ring + s * BN1 * BK, &tma_w1, &full_a[s], kb * BK, batch * N + c * BN1);");
  out.close();
  out.line("const int b = " + walked("c") + " & 1;");
  out.line("mbar_wait(&empty_b[b], ((" + walked("c") + " >> 1) & 1) ^ 1);");
  out.line("mbar_expect_tx(&full_b[b], W2_BYTES);");
  out.open("for (int j = 0; j < BN1 / 64; ++j)");
  out.line("u16* box = sw2 + (b * BN1 / 64 + j) * O * 64;  // rows or columns c * BN1 + 64 j on");
  if (w2_k_major) {
    out.line("tma_load_2d(box, &tma_w2, &full_b[b], c * BN1 + j * 64, batch * O);");
  } else {
    out.open("for (int d = 0; d < O / 64; ++d)");
    out.line("tma_load_2d(box + d * 64 * 64, &tma_w2, &full_b[b], d * 64, batch * N + c * BN1 + j * 64);");
    out.close();
  }
  out.close();
  out.close();
  if (s_.persistent) {
    out.line("q += chunks;");
    out.close();
  }
  out.close();
  out.line("return;");
  out.close();
}

}  // namespace comfuse::codegen
