// A program at another row count. The fused programs comfuse compiles have independent rows: row i of every
// output depends only on row i of the inputs read by row (the GEMM's A, a residual, a per-row vector) and on
// the inputs read whole (weights, vectors over the columns). Cutting such a program's rows gives the same
// program with fewer rows: what a row-sliced launch compiles and what a reference check on a block of rows
// evaluates.
#pragma once

#include <cstdint>

#include "te/program.h"

namespace comfuse::te {

/// The same program with `rows` rows: the first extent of every compute, and of every input that a compute
/// reads by its own row (the read's first index is the compute's first axis), becomes `rows`; the other
/// inputs are read whole and keep their shapes. The result is what the program's builder makes at `rows`
/// rows (the same workload key).
///
/// Throws CompileError naming the tensor when the rows are not independent: computes of different first
/// extents; a body that uses its row index other than as a read's first index (a causal mask compares it
/// with the column); a compute read at another row than the reader's own, or an input read both by row
/// and whole; or when `rows` is below 1.
Program with_rows(const Program& program, std::int64_t rows);

/// Rows `first` to `first + rows` of the program: with_rows, where a body's other uses of its row index (a
/// causal mask's comparison) count from `first`, so the block computes those rows of the whole program from
/// those rows of the inputs read by row. What a reference check evaluates on a block. Throws CompileError
/// as with_rows does for the other dependences between rows, and when the block is not within the rows.
Program row_block(const Program& program, std::int64_t first, std::int64_t rows);

}  // namespace comfuse::te
