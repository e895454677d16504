// Cutting a program at chosen tensors: the part that computes some outputs, with the tensors at the cut
// turned into inputs. Used to run a back-to-back program as two kernels.
#pragma once

#include <vector>

#include "te/program.h"

namespace comfuse::te {

/// The part of `program` computing `outputs` in which every tensor of `cut` is a new placeholder with the
/// same name, shape and dtype; computes reading a cut tensor are rebuilt to read the placeholder (their
/// names, axes and bodies are otherwise the same). The result's inputs are the new placeholders, in `cut`
/// order, then the inputs of `program` the part still reads, in their order. Throws CompileError when a
/// tensor of `cut` or `outputs` is not part of `program`, or when a cut tensor is a placeholder.
Program extract(const Program& program, const std::vector<Tensor>& cut, const std::vector<Tensor>& outputs);

}  // namespace comfuse::te
