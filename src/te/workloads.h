// The suite workloads: named program builders with shape parameters and default shapes.
//
// Every workload takes bf16 inputs, computes in f32 and returns one bf16 output named "Y". Input names:
// X [M, K] activations; W [N, K] a linear layer's weight (X·Wᵀ); b [N] bias; R [M, N] residual;
// gamma, beta [N]; W1 [N, K], W2 [O, N] for the MLPs; Q [BH, LQ, D], K and V [BH, LK, D] for attention
// (LQ = LK = L for `attention`). Norms use eps = 1e-5. The names here are used by the benchmarks, the tuning
// logs and the CLI: changing one breaks replay of existing logs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "te/program.h"

namespace comfuse::te {

struct ShapeParam {
  std::string name;
  std::int64_t value;
};

struct WorkloadInfo {
  std::string name;
  std::string summary;                    // one line, for `comfuse show --list`
  std::vector<ShapeParam> default_shape;  // every parameter, in the workload's order
};

/// Every suite workload, in a fixed order: gemm, gemm_bias_relu, post_layernorm, post_rmsnorm,
/// gemm_layernorm_relu, gemm_gelu_layernorm, gemm_softmax, gemm_softcap_softmax, mlp_relu, mlp_gelu,
/// attention, target_attention.
const std::vector<WorkloadInfo>& workloads();

/// The workload called `name`. Throws CompileError listing the valid names when there is none.
const WorkloadInfo& workload_info(const std::string& name);

using Shape = std::map<std::string, std::int64_t>;

/// `shape` completed with the defaults of the parameters it leaves out, after validation: throws
/// CompileError naming the parameter and listing the workload's parameters for a name the workload does not
/// have, a non-positive value, or a flag (attention's CAUSAL) other than 0 or 1. `info` is looked up by name
/// among workloads().
Shape resolve_shape(const WorkloadInfo& info, const Shape& shape);

/// Builds workload `name`; parameters absent from `shape` take their defaults. Throws CompileError for an
/// unknown workload (listing the valid names) and for the errors of resolve_shape. Extents too large for a
/// tensor axis (over 2^31 - 1) are rejected by the DSL with the tensor named.
Program build_workload(const std::string& name, const Shape& shape = {});

/// Parses "M=128,K=64,N=256" (spaces allowed around items, names and values). Values are decimal integers,
/// possibly negative (build_workload rejects those). An empty or all-blank text gives an empty shape.
/// Throws CompileError naming the item for an item without '=', a missing name or value, a name that is not
/// an identifier, a value that is not an integer or out of range, an empty item ("M=1,,N=2") and a repeated
/// parameter.
Shape parse_shape(const std::string& text);

/// "M=16384,K=1024,N=1024": every parameter of the workload in its order, values from `shape` or the
/// defaults. Validated as by resolve_shape.
std::string format_shape(const WorkloadInfo& info, const Shape& shape);

/// The benchmark name of a workload instance, "post_layernorm_M16384_K1024_N1024". Validated as by
/// resolve_shape.
std::string instance_name(const WorkloadInfo& info, const Shape& shape);

}  // namespace comfuse::te
