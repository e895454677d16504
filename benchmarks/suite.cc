// The suite's rows.
#include "suite.h"

#include <algorithm>

namespace comfuse::bench {

std::vector<SuiteEntry> suite() {
  std::vector<SuiteEntry> rows = {
      {"post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}}, "postln_M16384_K1024_N1024"},
      {"post_layernorm", {{"M", 16384}, {"K", 4096}, {"N", 1024}}, "postln_M16384_K4096_N1024"},
      {"post_layernorm", {{"M", 8192}, {"K", 4096}, {"N", 4096}}, "postln_M8192_K4096_N4096"},
      {"post_layernorm", {{"M", 8192}, {"K", 1024}, {"N", 4096}}, "postln_M8192_K1024_N4096"},
      {"post_rmsnorm", {{"M", 8192}, {"K", 4096}, {"N", 4096}}, "postrms_M8192_K4096_N4096"},
      {"gemm_softmax", {{"M", 4096}, {"K", 1024}, {"N", 8192}}, "gemm_softmax_M4096_K1024_N8192"},
      {"gemm_softmax", {{"M", 4096}, {"K", 4096}, {"N", 32000}}, "gemm_softmax_M4096_K4096_N32000"},
      {"gemm_gelu_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 4096}}, "gemm_gelu_ln_M16384_K1024_N4096"},
      {"gemm_layernorm_relu", {{"M", 8192}, {"K", 4096}, {"N", 4096}}, ""},
      {"gemm_softcap_softmax", {{"M", 4096}, {"K", 1024}, {"N", 8192}}, ""},
      {"gemm_bias_relu", {{"M", 8192}, {"K", 4096}, {"N", 4096}}, ""},
      {"mlp_relu", {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}, "b2b_mlp_M65536_K128_N512_O128"},
      {"mlp_relu", {{"M", 16384}, {"K", 1024}, {"N", 4096}, {"O", 1024}}, "b2b_mlp_M16384_K1024_N4096_O1024"},
      {"attention", {{"BH", 64}, {"L", 2048}, {"D", 128}, {"CAUSAL", 0}}, "b2b_attn_BH64_L2048_D128"},
      {"attention", {{"BH", 128}, {"L", 1024}, {"D", 64}, {"CAUSAL", 0}}, "b2b_attn_BH128_L1024_D64"},
      {"mlp_gelu", {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}, ""},
      {"mlp_gelu", {{"M", 16384}, {"K", 1024}, {"N", 4096}, {"O", 1024}}, ""},
      {"attention", {{"BH", 64}, {"L", 2048}, {"D", 128}, {"CAUSAL", 1}}, ""},
      {"attention", {{"BH", 128}, {"L", 1024}, {"D", 64}, {"CAUSAL", 1}}, ""},
      {"target_attention", {{"BH", 1024}, {"LQ", 32}, {"LK", 1024}, {"D", 64}}, ""},
      {"gemm", {{"M", 8192}, {"K", 8192}, {"N", 8192}}, ""},
  };
  // Each suite GEMM shape alone, through comfuse.
  const std::vector<te::Shape> gemm_shapes = {
      {{"M", 16384}, {"K", 1024}, {"N", 1024}}, {{"M", 16384}, {"K", 4096}, {"N", 1024}},
      {{"M", 8192}, {"K", 4096}, {"N", 4096}},  {{"M", 8192}, {"K", 1024}, {"N", 4096}},
      {{"M", 4096}, {"K", 1024}, {"N", 8192}},  {{"M", 4096}, {"K", 4096}, {"N", 32000}},
      {{"M", 16384}, {"K", 1024}, {"N", 4096}},
  };
  for (const te::Shape& shape : gemm_shapes) rows.push_back({"gemm", shape, ""});
  return rows;
}

bool selected(const SuiteEntry& entry, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  const std::string instance = te::instance_name(te::workload_info(entry.workload), entry.shape);
  return std::any_of(only.begin(), only.end(),
                     [&](const std::string& name) { return name == entry.workload || name == instance; });
}

}  // namespace comfuse::bench
