// The suite workloads: their table, their signatures at default and small shapes, and the shape text.
#include "te/workloads.h"

#include <gtest/gtest.h>

#include <set>

#include "te/equality.h"
#include "te/printer.h"

namespace comfuse::te {
namespace {

using Extents = std::vector<std::int64_t>;

struct Signature {
  std::vector<std::pair<std::string, Extents>> inputs;  // all bf16
  Extents output;                                       // "Y", bf16
};

// The documented signature of each workload for a shape with every parameter given.
Signature expected_signature(const std::string& workload, const Shape& s) {
  auto p = [&](const char* name) { return s.at(name); };
  if (workload == "gemm" || workload == "gemm_softmax" || workload == "gemm_softcap_softmax") {
    return {{{"X", {p("M"), p("K")}}, {"W", {p("N"), p("K")}}}, {p("M"), p("N")}};
  }
  if (workload == "gemm_bias_relu") {
    return {{{"X", {p("M"), p("K")}}, {"W", {p("N"), p("K")}}, {"b", {p("N")}}}, {p("M"), p("N")}};
  }
  if (workload == "post_layernorm") {
    return {{{"X", {p("M"), p("K")}},
             {"W", {p("N"), p("K")}},
             {"b", {p("N")}},
             {"R", {p("M"), p("N")}},
             {"gamma", {p("N")}},
             {"beta", {p("N")}}},
            {p("M"), p("N")}};
  }
  if (workload == "post_rmsnorm") {
    return {{{"X", {p("M"), p("K")}}, {"W", {p("N"), p("K")}}, {"b", {p("N")}}, {"gamma", {p("N")}}},
            {p("M"), p("N")}};
  }
  if (workload == "gemm_layernorm_relu" || workload == "gemm_gelu_layernorm") {
    return {{{"X", {p("M"), p("K")}},
             {"W", {p("N"), p("K")}},
             {"b", {p("N")}},
             {"gamma", {p("N")}},
             {"beta", {p("N")}}},
            {p("M"), p("N")}};
  }
  if (workload == "mlp_relu" || workload == "mlp_gelu") {
    return {{{"X", {p("M"), p("K")}}, {"W1", {p("N"), p("K")}}, {"W2", {p("O"), p("N")}}}, {p("M"), p("O")}};
  }
  if (workload == "attention") {
    return {{{"Q", {p("BH"), p("L"), p("D")}},
             {"K", {p("BH"), p("L"), p("D")}},
             {"V", {p("BH"), p("L"), p("D")}}},
            {p("BH"), p("L"), p("D")}};
  }
  if (workload == "target_attention") {
    return {{{"Q", {p("BH"), p("LQ"), p("D")}},
             {"K", {p("BH"), p("LK"), p("D")}},
             {"V", {p("BH"), p("LK"), p("D")}}},
            {p("BH"), p("LQ"), p("D")}};
  }
  ADD_FAILURE() << "no expected signature for workload " << workload;
  return {};
}

// Small, pairwise distinct extents so that a swapped axis shows.
Shape small_shape(const WorkloadInfo& info) {
  const Shape extents = {{"M", 6}, {"K", 5}, {"N", 7},  {"O", 3},  {"BH", 2},
                         {"L", 9}, {"D", 4}, {"LQ", 3}, {"LK", 8}, {"CAUSAL", 1}};
  Shape shape;
  for (const ShapeParam& p : info.default_shape) shape[p.name] = extents.at(p.name);
  return shape;
}

Shape default_shape(const WorkloadInfo& info) {
  Shape shape;
  for (const ShapeParam& p : info.default_shape) shape[p.name] = p.value;
  return shape;
}

void expect_signature(const WorkloadInfo& info, const Shape& shape) {
  SCOPED_TRACE(instance_name(info, shape));
  const Program program = build_workload(info.name, shape);
  const Signature expected = expected_signature(info.name, shape);
  ASSERT_EQ(program.inputs().size(), expected.inputs.size());
  for (std::size_t n = 0; n < expected.inputs.size(); ++n) {
    const Tensor& input = program.inputs()[n];
    EXPECT_EQ(input.name(), expected.inputs[n].first);
    EXPECT_EQ(input.shape(), expected.inputs[n].second) << input.name();
    EXPECT_EQ(input.dtype(), DType::bf16) << input.name();
  }
  ASSERT_EQ(program.outputs().size(), 1u);
  EXPECT_EQ(program.outputs()[0].name(), "Y");
  EXPECT_EQ(program.outputs()[0].shape(), expected.output);
  EXPECT_EQ(program.outputs()[0].dtype(), DType::bf16);
  std::set<std::string> names;
  for (const Tensor& t : program.tensors()) {
    EXPECT_TRUE(names.insert(t.name()).second) << "duplicate name " << t.name();
    // Everything between the bf16 inputs and the bf16 stores computes in f32.
    if (!t.is_placeholder() && t.name() != "Y" && t.name() != "H" && t.name() != "P_bf16") {
      EXPECT_EQ(t.dtype(), DType::f32) << t.name();
    }
  }
}

TEST(Workloads, OrderAndDefaultShapes) {
  std::vector<std::string> listed;
  for (const WorkloadInfo& info : workloads()) {
    listed.push_back(info.name + " " + format_shape(info, {}));
    EXPECT_FALSE(info.summary.empty()) << info.name;
  }
  EXPECT_EQ(listed, (std::vector<std::string>{
                        "gemm M=8192,K=8192,N=8192",
                        "gemm_bias_relu M=8192,K=4096,N=4096",
                        "post_layernorm M=16384,K=1024,N=1024",
                        "post_rmsnorm M=8192,K=4096,N=4096",
                        "gemm_layernorm_relu M=8192,K=4096,N=4096",
                        "gemm_gelu_layernorm M=16384,K=1024,N=4096",
                        "gemm_softmax M=4096,K=1024,N=8192",
                        "gemm_softcap_softmax M=4096,K=1024,N=8192",
                        "mlp_relu M=65536,K=128,N=512,O=128",
                        "mlp_gelu M=65536,K=128,N=512,O=128",
                        "attention BH=64,L=2048,D=128,CAUSAL=0",
                        "target_attention BH=1024,LQ=32,LK=1024,D=64",
                    }));
}

TEST(Workloads, EveryWorkloadBuildsAtItsDefaults) {
  for (const WorkloadInfo& info : workloads()) expect_signature(info, default_shape(info));
}

TEST(Workloads, EveryWorkloadBuildsAtASmallShape) {
  for (const WorkloadInfo& info : workloads()) expect_signature(info, small_shape(info));
}

TEST(Workloads, AbsentParametersTakeTheirDefaults) {
  const Program program = build_workload("post_layernorm", {{"M", 64}});
  EXPECT_EQ(program.inputs()[0].shape(), (Extents{64, 1024}));
  EXPECT_EQ(program.outputs()[0].shape(), (Extents{64, 1024}));
  EXPECT_EQ(resolve_shape(workload_info("post_layernorm"), {{"M", 64}}),
            (Shape{{"M", 64}, {"K", 1024}, {"N", 1024}}));
}

TEST(Workloads, BuildingTwiceGivesEqualPrograms) {
  for (const WorkloadInfo& info : workloads()) {
    const Program a = build_workload(info.name, small_shape(info)),
                  b = build_workload(info.name, small_shape(info));
    EXPECT_TRUE(structural_equal(a, b)) << info.name;
    EXPECT_EQ(structural_hash(a), structural_hash(b)) << info.name;
  }
}

TEST(Workloads, ContractionsAreBareSumReductions) {
  const std::set<std::string> contractions = {"mm", "mm1", "mm2", "S", "O"};
  for (const WorkloadInfo& info : workloads()) {
    int found = 0;
    const Program program = build_workload(info.name, small_shape(info));
    for (const Tensor& t : program.tensors()) {
      if (!contractions.count(t.name())) continue;
      ++found;
      ASSERT_EQ(t->body.kind(), ExprKind::kReduce) << info.name << ": " << to_string(t);
      EXPECT_EQ(t->body.as<ReduceNode>()->op, ReduceOp::kSum) << info.name;
    }
    const bool two_gemms = info.name.starts_with("mlp") || info.name.ends_with("attention");
    EXPECT_EQ(found, two_gemms ? 2 : 1) << info.name;
  }
}

TEST(Workloads, InputNamesPerWorkload) {
  std::vector<std::string> rows;
  for (const WorkloadInfo& info : workloads()) {
    std::string row = info.name + ":";
    const Program program = build_workload(info.name, small_shape(info));
    for (const Tensor& input : program.inputs()) row += " " + input.name();
    rows.push_back(row);
  }
  EXPECT_EQ(rows, (std::vector<std::string>{
                      "gemm: X W",
                      "gemm_bias_relu: X W b",
                      "post_layernorm: X W b R gamma beta",
                      "post_rmsnorm: X W b gamma",
                      "gemm_layernorm_relu: X W b gamma beta",
                      "gemm_gelu_layernorm: X W b gamma beta",
                      "gemm_softmax: X W",
                      "gemm_softcap_softmax: X W",
                      "mlp_relu: X W1 W2",
                      "mlp_gelu: X W1 W2",
                      "attention: Q K V",
                      "target_attention: Q K V",
                  }));
}

TEST(Workloads, PostLayernormPipeline) {
  const Program program = build_workload("post_layernorm", {{"M", 6}, {"K", 5}, {"N", 7}});
  std::vector<std::string> names;
  for (const Tensor& t : program.tensors()) names.push_back(t.name());
  EXPECT_EQ(names, (std::vector<std::string>{"X", "W", "mm", "b", "biased", "R", "summed", "ln_mean",
                                             "ln_var", "gamma", "beta", "ln", "Y"}));
  EXPECT_EQ(to_string(*program.find("Y")), "Y: bf16[6, 7] = compute(i0, i1) bf16(ln[i0, i1])");
}

TEST(Workloads, SoftcapScalesByInverseSqrtK) {
  const Program program = build_workload("gemm_softcap_softmax", {{"M", 2}, {"K", 16}, {"N", 3}});
  EXPECT_EQ(to_string(*program.find("scaled")), "scaled: f32[2, 3] = compute(i0, i1) (mm[i0, i1] * 0.25)");
  EXPECT_EQ(to_string(*program.find("capped")),
            "capped: f32[2, 3] = compute(i0, i1) (30.0 * tanh((scaled[i0, i1] / 30.0)))");
  EXPECT_TRUE(program.find("sm").has_value());
}

TEST(Workloads, MlpStoresTheHiddenActivationAsBf16) {
  for (const char* name : {"mlp_relu", "mlp_gelu"}) {
    const Program program = build_workload(name, {{"M", 6}, {"K", 5}, {"N", 7}, {"O", 3}});
    EXPECT_EQ(to_string(*program.find("H")), "H: bf16[6, 7] = compute(i0, i1) bf16(act[i0, i1])");
    EXPECT_EQ(to_string(*program.find("mm2")),
              "mm2: f32[6, 3] = compute(i0, i1) sum[k<7]((f32(H[i0, k]) * f32(W2[i1, k])))");
  }
  const Program gelu = build_workload("mlp_gelu", {{"M", 6}});
  EXPECT_NE(to_string(*gelu.find("act")).find("tanh"), std::string::npos);
}

TEST(Workloads, AttentionMasksOnlyWhenCausal) {
  const Shape small = {{"BH", 2}, {"L", 4}, {"D", 16}};
  const Program plain = build_workload("attention", small);
  EXPECT_FALSE(plain.find("S_masked").has_value());
  Shape causal_shape = small;
  causal_shape["CAUSAL"] = 1;
  const Program causal = build_workload("attention", causal_shape);
  ASSERT_TRUE(causal.find("S_masked").has_value());
  EXPECT_EQ(to_string(*causal.find("S_masked")),
            "S_masked: f32[2, 4, 4] = compute(i0, i1, i2) select((i2 <= i1), S_scaled[i0, i1, i2], -inf)");
  EXPECT_EQ(to_string(*causal.find("S_scaled")),
            "S_scaled: f32[2, 4, 4] = compute(i0, i1, i2) (S[i0, i1, i2] * 0.25)");
  EXPECT_EQ(to_string(*causal.find("P_bf16")),
            "P_bf16: bf16[2, 4, 4] = compute(i0, i1, i2) bf16(P[i0, i1, i2])");
  EXPECT_EQ(to_string(*causal.find("O")),
            "O: f32[2, 4, 16] = compute(i0, i1, i2) sum[k<4]((f32(P_bf16[i0, i1, k]) * f32(V[i0, k, i2])))");
}

TEST(ShapeText, ParsesItemsWithSpaces) {
  EXPECT_EQ(parse_shape("M=128,K=64,N=256"), (Shape{{"M", 128}, {"K", 64}, {"N", 256}}));
  EXPECT_EQ(parse_shape(" M = 128 ,  K=64 "), (Shape{{"M", 128}, {"K", 64}}));
  EXPECT_EQ(parse_shape("CAUSAL=0"), (Shape{{"CAUSAL", 0}}));
  EXPECT_EQ(parse_shape("M=-3"), (Shape{{"M", -3}}));  // parsed; build_workload rejects it
  EXPECT_EQ(parse_shape(""), Shape{});
  EXPECT_EQ(parse_shape("  "), Shape{});
}

TEST(ShapeText, FormatsInParameterOrderWithDefaults) {
  const WorkloadInfo& info = workload_info("post_layernorm");
  EXPECT_EQ(format_shape(info, {{"N", 256}, {"M", 64}}), "M=64,K=1024,N=256");
  EXPECT_EQ(instance_name(info, {}), "post_layernorm_M16384_K1024_N1024");
  EXPECT_EQ(instance_name(info, {{"N", 256}, {"M", 64}}), "post_layernorm_M64_K1024_N256");
  EXPECT_EQ(instance_name(workload_info("attention"), {{"CAUSAL", 1}}), "attention_BH64_L2048_D128_CAUSAL1");
}

TEST(ShapeText, RoundTripsForEveryWorkload) {
  for (const WorkloadInfo& info : workloads()) {
    for (const Shape& shape : {Shape{}, small_shape(info)}) {
      const std::string text = format_shape(info, shape);
      EXPECT_EQ(parse_shape(text), resolve_shape(info, shape)) << text;
      EXPECT_EQ(format_shape(info, parse_shape(text)), text);
      EXPECT_EQ(instance_name(info, parse_shape(text)), instance_name(info, shape));
    }
  }
}

}  // namespace
}  // namespace comfuse::te
