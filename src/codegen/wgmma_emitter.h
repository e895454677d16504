// The device functions that issue one wgmma step, emitted per tile width into generated kernels.
#pragma once

#include <string>

#include "codegen/code_stream.h"
#include "te/dtype.h"

namespace comfuse::codegen {

/// `name(float (&d)[n/2], u64 desc_a, u64 desc_b, int scale_d)`: one m64nNk16 step with both operands in
/// shared memory (K-major, 128-byte swizzle): d += A * B^T, or d = A * B^T when scale_d is 0. With
/// `b_n_major`, B is read N-major (its rows run along K: a [K, N] matrix).
void emit_wgmma_ss(CodeStream& out, const std::string& name, int n, te::DType operand,
                   bool b_n_major = false);

/// `name(float (&d)[n/2], const u32 (&a)[4], u64 desc_b, int scale_d)`: the same step with A from registers,
/// in the m64k16 register fragment layout (4 registers of two packed 16-bit values per thread). With
/// `b_n_major`, B is read N-major (its rows run along K: a [K, N] matrix), else K-major.
void emit_wgmma_rs(CodeStream& out, const std::string& name, int n, te::DType operand,
                   bool b_n_major = false);

}  // namespace comfuse::codegen
