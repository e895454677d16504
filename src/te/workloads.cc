// The suite workloads built from the op library, and the shape text of their instances.
#include "te/workloads.h"

#include <charconv>
#include <cmath>

#include "support/error.h"
#include "te/ops.h"

namespace comfuse::te {
namespace {

constexpr double kEps = 1e-5;
constexpr double kSoftcap = 30.0;

struct WorkloadSpec {
  WorkloadInfo info;
  Program (*build)(const Shape&);
  std::vector<std::string> flags;  // parameters that take 0 or 1 rather than a positive extent
};

Tensor bf16_input(std::vector<std::int64_t> shape, const std::string& name) {
  return placeholder(std::move(shape), DType::bf16, name);
}

Tensor output(const Tensor& result) {
  return cast_to(result, DType::bf16, "Y");
}

// X [M, K] and W [N, K]: the operands of a linear layer, mm = X·Wᵀ.
struct Linear {
  Tensor X, W, mm;
};

Linear linear(const Shape& s) {
  Linear l;
  l.X = bf16_input({s.at("M"), s.at("K")}, "X");
  l.W = bf16_input({s.at("N"), s.at("K")}, "W");
  l.mm = matmul(l.X, l.W, BLayout::kColMajor, "mm");
  return l;
}

Tensor bias_input(const Shape& s) {
  return bf16_input({s.at("N")}, "b");
}

Program build_gemm(const Shape& s) {
  const Linear l = linear(s);
  return Program({l.X, l.W}, {output(l.mm)});
}

Program build_gemm_bias_relu(const Shape& s) {
  const Linear l = linear(s);
  const Tensor b = bias_input(s);
  return Program({l.X, l.W, b}, {output(relu(bias_add(l.mm, b, "biased"), "act"))});
}

Program build_post_layernorm(const Shape& s) {
  const Linear l = linear(s);
  const Tensor b = bias_input(s), R = bf16_input({s.at("M"), s.at("N")}, "R");
  const Tensor gamma = bf16_input({s.at("N")}, "gamma"), beta = bf16_input({s.at("N")}, "beta");
  const Tensor summed = residual_add(bias_add(l.mm, b, "biased"), R, "summed");
  return Program({l.X, l.W, b, R, gamma, beta}, {output(layer_norm(summed, gamma, beta, kEps, "ln"))});
}

Program build_post_rmsnorm(const Shape& s) {
  const Linear l = linear(s);
  const Tensor b = bias_input(s), gamma = bf16_input({s.at("N")}, "gamma");
  return Program({l.X, l.W, b, gamma}, {output(rms_norm(bias_add(l.mm, b, "biased"), gamma, kEps, "rms"))});
}

Program build_gemm_layernorm_relu(const Shape& s) {
  const Linear l = linear(s);
  const Tensor b = bias_input(s);
  const Tensor gamma = bf16_input({s.at("N")}, "gamma"), beta = bf16_input({s.at("N")}, "beta");
  const Tensor ln = layer_norm(bias_add(l.mm, b, "biased"), gamma, beta, kEps, "ln");
  return Program({l.X, l.W, b, gamma, beta}, {output(relu(ln, "act"))});
}

Program build_gemm_gelu_layernorm(const Shape& s) {
  const Linear l = linear(s);
  const Tensor b = bias_input(s);
  const Tensor gamma = bf16_input({s.at("N")}, "gamma"), beta = bf16_input({s.at("N")}, "beta");
  const Tensor act = gelu_tanh(bias_add(l.mm, b, "biased"), "act");
  return Program({l.X, l.W, b, gamma, beta}, {output(layer_norm(act, gamma, beta, kEps, "ln"))});
}

Program build_gemm_softmax(const Shape& s) {
  const Linear l = linear(s);
  return Program({l.X, l.W}, {output(softmax(l.mm, "sm"))});
}

Program build_gemm_softcap_softmax(const Shape& s) {
  const Linear l = linear(s);
  const Tensor scaled = scale(l.mm, 1.0 / std::sqrt(static_cast<double>(s.at("K"))), "scaled");
  return Program({l.X, l.W}, {output(softmax(tanh_softcap(scaled, kSoftcap, "capped"), "sm"))});
}

// relu/gelu(X·W1ᵀ)·W2ᵀ with the hidden activation stored as bf16 between the GEMMs.
Program build_mlp(const Shape& s, bool gelu) {
  const Tensor X = bf16_input({s.at("M"), s.at("K")}, "X");
  const Tensor W1 = bf16_input({s.at("N"), s.at("K")}, "W1"), W2 = bf16_input({s.at("O"), s.at("N")}, "W2");
  const Tensor mm1 = matmul(X, W1, BLayout::kColMajor, "mm1");
  const Tensor act = gelu ? gelu_tanh(mm1, "act") : relu(mm1, "act");
  const Tensor H = cast_to(act, DType::bf16, "H");
  return Program({X, W1, W2}, {output(matmul(H, W2, BLayout::kColMajor, "mm2"))});
}

Program build_mlp_relu(const Shape& s) {
  return build_mlp(s, /*gelu=*/false);
}
Program build_mlp_gelu(const Shape& s) {
  return build_mlp(s, /*gelu=*/true);
}

// softmax(Q·Kᵀ / √D [causal])·V, the probabilities stored as bf16 before the second GEMM.
Program attention_program(std::int64_t bh, std::int64_t lq, std::int64_t lk, std::int64_t d, bool causal) {
  const Tensor Q = bf16_input({bh, lq, d}, "Q"), K = bf16_input({bh, lk, d}, "K"),
               V = bf16_input({bh, lk, d}, "V");
  Tensor S =
      scale(matmul(Q, K, BLayout::kColMajor, "S"), 1.0 / std::sqrt(static_cast<double>(d)), "S_scaled");
  if (causal) S = causal_mask(S, "S_masked");
  const Tensor P = cast_to(softmax(S, "P"), DType::bf16, "P_bf16");
  return Program({Q, K, V}, {output(matmul(P, V, BLayout::kRowMajor, "O"))});
}

Program build_attention(const Shape& s) {
  return attention_program(s.at("BH"), s.at("L"), s.at("L"), s.at("D"), s.at("CAUSAL") == 1);
}

Program build_target_attention(const Shape& s) {
  return attention_program(s.at("BH"), s.at("LQ"), s.at("LK"), s.at("D"), /*causal=*/false);
}

const std::vector<WorkloadSpec>& specs() {
  static const std::vector<WorkloadSpec> table = {
      {{"gemm", "Y = X @ W^T", {{"M", 8192}, {"K", 8192}, {"N", 8192}}}, build_gemm, {}},
      {{"gemm_bias_relu", "Y = relu(X @ W^T + b)", {{"M", 8192}, {"K", 4096}, {"N", 4096}}},
       build_gemm_bias_relu,
       {}},
      {{"post_layernorm", "Y = LayerNorm(X @ W^T + b + R)", {{"M", 16384}, {"K", 1024}, {"N", 1024}}},
       build_post_layernorm,
       {}},
      {{"post_rmsnorm", "Y = RMSNorm(X @ W^T + b)", {{"M", 8192}, {"K", 4096}, {"N", 4096}}},
       build_post_rmsnorm,
       {}},
      {{"gemm_layernorm_relu", "Y = relu(LayerNorm(X @ W^T + b))", {{"M", 8192}, {"K", 4096}, {"N", 4096}}},
       build_gemm_layernorm_relu,
       {}},
      {{"gemm_gelu_layernorm",
        "Y = LayerNorm(gelu_tanh(X @ W^T + b))",
        {{"M", 16384}, {"K", 1024}, {"N", 4096}}},
       build_gemm_gelu_layernorm,
       {}},
      {{"gemm_softmax", "Y = softmax(X @ W^T)", {{"M", 4096}, {"K", 1024}, {"N", 8192}}},
       build_gemm_softmax,
       {}},
      {{"gemm_softcap_softmax",
        "Y = softmax(30 * tanh((X @ W^T / sqrt(K)) / 30))",
        {{"M", 4096}, {"K", 1024}, {"N", 8192}}},
       build_gemm_softcap_softmax,
       {}},
      {{"mlp_relu", "Y = bf16(relu(X @ W1^T)) @ W2^T", {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}},
       build_mlp_relu,
       {}},
      {{"mlp_gelu",
        "Y = bf16(gelu_tanh(X @ W1^T)) @ W2^T",
        {{"M", 65536}, {"K", 128}, {"N", 512}, {"O", 128}}},
       build_mlp_gelu,
       {}},
      {{"attention",
        "Y = bf16(softmax(Q @ K^T / sqrt(D), causal if CAUSAL=1)) @ V",
        {{"BH", 64}, {"L", 2048}, {"D", 128}, {"CAUSAL", 0}}},
       build_attention,
       {"CAUSAL"}},
      {{"target_attention",
        "Y = bf16(softmax(Q @ K^T / sqrt(D))) @ V, few queries, long keys",
        {{"BH", 1024}, {"LQ", 32}, {"LK", 1024}, {"D", 64}}},
       build_target_attention,
       {}},
  };
  return table;
}

const WorkloadSpec& spec_of(const std::string& name) {
  for (const WorkloadSpec& spec : specs()) {
    if (spec.info.name == name) return spec;
  }
  std::string valid;
  for (const WorkloadSpec& spec : specs()) valid += (valid.empty() ? "" : ", ") + spec.info.name;
  throw CompileError("unknown workload '" + name + "'; valid workloads: " + valid);
}

std::string parameter_list(const WorkloadInfo& info) {
  std::string list;
  for (const ShapeParam& p : info.default_shape) list += (list.empty() ? "" : ", ") + p.name;
  return list;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

const std::vector<WorkloadInfo>& workloads() {
  static const std::vector<WorkloadInfo> infos = [] {
    std::vector<WorkloadInfo> list;
    for (const WorkloadSpec& spec : specs()) list.push_back(spec.info);
    return list;
  }();
  return infos;
}

const WorkloadInfo& workload_info(const std::string& name) {
  return spec_of(name).info;
}

Shape resolve_shape(const WorkloadInfo& info, const Shape& shape) {
  const WorkloadSpec& spec = spec_of(info.name);
  for (const auto& [name, value] : shape) {
    bool known = false;
    for (const ShapeParam& p : info.default_shape) known = known || p.name == name;
    if (!known) {
      throw CompileError("workload '" + info.name + "' has no parameter '" + name + "'; its parameters are " +
                         parameter_list(info));
    }
  }
  Shape resolved;
  for (const ShapeParam& p : info.default_shape) {
    const auto given = shape.find(p.name);
    const std::int64_t value = given == shape.end() ? p.value : given->second;
    resolved[p.name] = value;
  }
  for (const ShapeParam& p : info.default_shape) {
    const std::int64_t value = resolved.at(p.name);
    bool is_flag = false;
    for (const std::string& flag : spec.flags) is_flag = is_flag || flag == p.name;
    if (is_flag && value != 0 && value != 1) {
      throw CompileError("workload '" + info.name + "': parameter '" + p.name +
                         "' is a flag and must be 0 or 1, got " + std::to_string(value) +
                         " (parameters: " + parameter_list(info) + ")");
    }
    if (!is_flag && value <= 0) {
      throw CompileError("workload '" + info.name + "': parameter '" + p.name + "' must be positive, got " +
                         std::to_string(value) + " (parameters: " + parameter_list(info) + ")");
    }
  }
  return resolved;
}

Program build_workload(const std::string& name, const Shape& shape) {
  const WorkloadSpec& spec = spec_of(name);
  return spec.build(resolve_shape(spec.info, shape));
}

Shape parse_shape(const std::string& text) {
  Shape shape;
  if (trim(text).empty()) return shape;
  std::size_t start = 0;
  for (int position = 1;; ++position) {
    const std::size_t comma = text.find(',', start);
    const std::string item =
        trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) {
      throw CompileError("empty shape item at position " + std::to_string(position) + " in '" + text + "'");
    }
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw CompileError("shape item '" + item + "' is not NAME=VALUE");
    const std::string name = trim(item.substr(0, eq)), value_text = trim(item.substr(eq + 1));
    if (name.empty()) throw CompileError("shape item '" + item + "' has no parameter name");
    if (value_text.empty()) throw CompileError("shape item '" + item + "' has no value");
    if (!is_identifier(name)) {
      throw CompileError("shape item '" + item + "': parameter name '" + name + "' is not an identifier");
    }
    std::int64_t value = 0;
    const char* end = value_text.data() + value_text.size();
    const auto [stop, ec] = std::from_chars(value_text.data(), end, value);
    if (ec == std::errc::result_out_of_range) {
      throw CompileError("shape item '" + item + "': value '" + value_text + "' is out of range");
    }
    if (ec != std::errc() || stop != end) {
      throw CompileError("shape item '" + item + "': value '" + value_text + "' is not an integer");
    }
    if (!shape.emplace(name, value).second) {
      throw CompileError("shape item '" + item + "' repeats parameter '" + name + "'");
    }
    if (comma == std::string::npos) return shape;
    start = comma + 1;
  }
}

std::string format_shape(const WorkloadInfo& info, const Shape& shape) {
  const Shape resolved = resolve_shape(info, shape);
  std::string text;
  for (const ShapeParam& p : info.default_shape) {
    text += (text.empty() ? "" : ",") + p.name + "=" + std::to_string(resolved.at(p.name));
  }
  return text;
}

std::string instance_name(const WorkloadInfo& info, const Shape& shape) {
  const Shape resolved = resolve_shape(info, shape);
  std::string text = info.name;
  for (const ShapeParam& p : info.default_shape) text += "_" + p.name + std::to_string(resolved.at(p.name));
  return text;
}

}  // namespace comfuse::te
