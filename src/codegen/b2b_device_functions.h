// The device functions the fused back-to-back kernel calls, emitted into its source after its constants.
#pragma once

#include "codegen/code_stream.h"
#include "te/dtype.h"

namespace comfuse::codegen {

struct B2BDeviceFunctions {
  te::DType operand;       // of the GEMMs (bf16 or f16)
  int bn1;                 // GEMM1's tile width (chained columns a chunk)
  int o;                   // GEMM2's width
  bool w2_n_major;         // W2 laid out [N, O] (attention's V), read N-major
  bool operand_in_shared;  // GEMM2's A operand from shared memory, else from registers
  bool pingpong;           // the two consumer warpgroups take turns
  bool tma_store;          // GEMM2's epilogue staged in shared memory and stored with TMA
};

/// pack_pair (two f32 as one 16-bit pair register), the N-major descriptor where W2 needs it, the two wgmma
/// steps (`wgmma_first` m64nBN1k16 from shared memory; `wgmma_second` m64nOk16 with A from registers or
/// shared memory), `shared_ready` where a warpgroup's shared-memory stores feed the async proxy (the operand
/// in shared memory, the TMA store's staged tile), the TMA store's functions and the ping-pong turns.
void emit_b2b_device_functions(CodeStream& out, const B2BDeviceFunctions& f);

}  // namespace comfuse::codegen
