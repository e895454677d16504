// Fusion analysis of every suite workload and of operators written directly in the DSL: the anchor, the
// roles, the stages with their tiles, row values and reductions, the carried tiles and the epilogue inputs.
#include "schedule/fusion_plan.h"

#include <gtest/gtest.h>

#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::schedule {
namespace {

using te::DType;
using te::Tensor;
using te::Var;

FusionPlan plan_of(const std::string& workload, std::int64_t m, std::int64_t k, std::int64_t n) {
  return plan_fusion(te::build_workload(workload, {{"M", m}, {"K", k}, {"N", n}}));
}

std::vector<std::string> names(const std::vector<Tensor>& tensors) {
  std::vector<std::string> result;
  for (const Tensor& t : tensors) result.push_back(t.name());
  return result;
}

using Names = std::vector<std::string>;

struct ExpectedPlan {
  std::string workload;
  std::string text;
};

// The printed plan of each suite workload at M=128, K=64, N=256.
const std::vector<ExpectedPlan>& expected_plans() {
  static const std::vector<ExpectedPlan> plans = {
      {"gemm",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles Y; row values -; reductions -\n"
       "carried across reductions: -\n"
       "epilogue inputs: -\n"},
      {"gemm_bias_relu",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles biased, act, Y; row values -; reductions -\n"
       "carried across reductions: -\n"
       "epilogue inputs: b (row vector [N])\n"},
      {"post_layernorm",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles biased, summed; row values -; reductions ln_mean\n"
       "stage 1: tiles -; row values -; reductions ln_var\n"
       "stage 2: tiles ln, Y; row values -; reductions -\n"
       "carried across reductions: summed\n"
       "epilogue inputs: b (row vector [N]) R (full [M, N]) gamma (row vector [N]) beta (row vector [N])\n"},
      {"post_rmsnorm",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles biased; row values -; reductions rms_ms\n"
       "stage 1: tiles rms, Y; row values -; reductions -\n"
       "carried across reductions: biased\n"
       "epilogue inputs: b (row vector [N]) gamma (row vector [N])\n"},
      {"gemm_layernorm_relu",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles biased; row values -; reductions ln_mean\n"
       "stage 1: tiles -; row values -; reductions ln_var\n"
       "stage 2: tiles ln, act, Y; row values -; reductions -\n"
       "carried across reductions: biased\n"
       "epilogue inputs: b (row vector [N]) gamma (row vector [N]) beta (row vector [N])\n"},
      {"gemm_gelu_layernorm",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles biased, act; row values -; reductions ln_mean\n"
       "stage 1: tiles -; row values -; reductions ln_var\n"
       "stage 2: tiles ln, Y; row values -; reductions -\n"
       "carried across reductions: act\n"
       "epilogue inputs: b (row vector [N]) gamma (row vector [N]) beta (row vector [N])\n"},
      {"gemm_softmax",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles -; row values -; reductions sm_max\n"
       "stage 1: tiles sm_exp; row values -; reductions sm_sum\n"
       "stage 2: tiles sm, Y; row values -; reductions -\n"
       "carried across reductions: mm, sm_exp\n"
       "epilogue inputs: -\n"},
      {"gemm_softcap_softmax",
       "anchor mm = X[M, K] x W[N, K]  M=128 N=256 K=64\n"
       "stage 0: tiles scaled, capped; row values -; reductions sm_max\n"
       "stage 1: tiles sm_exp; row values -; reductions sm_sum\n"
       "stage 2: tiles sm, Y; row values -; reductions -\n"
       "carried across reductions: capped, sm_exp\n"
       "epilogue inputs: -\n"},
  };
  return plans;
}

TEST(FusionPlan, PrintedPlanOfEverySuiteWorkload) {
  for (const ExpectedPlan& expected : expected_plans()) {
    SCOPED_TRACE(expected.workload);
    EXPECT_EQ(to_string(plan_of(expected.workload, 128, 64, 256)), expected.text);
  }
}

TEST(FusionPlan, AnchorOfEverySuiteWorkloadAtAnOddShape) {
  for (const ExpectedPlan& expected : expected_plans()) {
    SCOPED_TRACE(expected.workload);
    const FusionPlan plan = plan_of(expected.workload, 127, 72, 257);
    EXPECT_EQ(plan.anchor.tensor.name(), "mm");
    EXPECT_EQ(plan.anchor.a.name(), "X");
    EXPECT_EQ(plan.anchor.b.name(), "W");
    EXPECT_TRUE(plan.anchor.b_k_major);
    EXPECT_EQ(plan.anchor.m, 127);
    EXPECT_EQ(plan.anchor.n, 257);
    EXPECT_EQ(plan.anchor.k, 72);
    EXPECT_EQ(plan.role(plan.anchor.tensor), Role::kAnchor);
    EXPECT_EQ(plan.stage(plan.anchor.tensor), 0);
    // The anchor's operands are not epilogue inputs.
    for (const EpilogueInput& input : plan.epilogue_inputs) {
      EXPECT_FALSE(input.tensor.same_as(plan.anchor.a));
      EXPECT_FALSE(input.tensor.same_as(plan.anchor.b));
    }
  }
}

TEST(FusionPlan, StagesOfEachWorkload) {
  const struct {
    std::string workload;
    std::size_t stages;
    bool reductions;
  } cases[] = {{"gemm", 1, false},        {"gemm_bias_relu", 1, false},     {"post_layernorm", 3, true},
               {"post_rmsnorm", 2, true}, {"gemm_layernorm_relu", 3, true}, {"gemm_gelu_layernorm", 3, true},
               {"gemm_softmax", 3, true}, {"gemm_softcap_softmax", 3, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.workload);
    const FusionPlan plan = plan_of(c.workload, 64, 64, 96);
    EXPECT_EQ(plan.stages.size(), c.stages);
    EXPECT_EQ(plan.has_reductions(), c.reductions);
    // The last stage never reduces: its reductions would have nothing to feed.
    EXPECT_TRUE(plan.stages.back().reductions.empty());
  }
}

TEST(FusionPlan, RolesAndStagesOfPostLayerNorm) {
  const FusionPlan plan = plan_of("post_layernorm", 128, 64, 256);
  const struct {
    std::string name;
    Role role;
    int stage;
  } expected[] = {{"X", Role::kInput, 0},     {"W", Role::kInput, 0},          {"mm", Role::kAnchor, 0},
                  {"b", Role::kInput, 0},     {"biased", Role::kTile, 0},      {"R", Role::kInput, 0},
                  {"summed", Role::kTile, 0}, {"ln_mean", Role::kRowValue, 1}, {"ln_var", Role::kRowValue, 2},
                  {"gamma", Role::kInput, 0}, {"beta", Role::kInput, 0},       {"ln", Role::kTile, 2},
                  {"Y", Role::kTile, 2}};
  const auto& tensors = plan.program.tensors();
  ASSERT_EQ(tensors.size(), std::size(expected));
  ASSERT_EQ(plan.roles.size(), tensors.size());
  ASSERT_EQ(plan.stage_of.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(tensors[i].name(), expected[i].name);
    EXPECT_EQ(plan.role(tensors[i]), expected[i].role);
    EXPECT_EQ(plan.stage(tensors[i]), expected[i].stage);
  }
}

TEST(FusionPlan, StageFieldsOfSoftmax) {
  const FusionPlan plan = plan_of("gemm_softmax", 128, 64, 256);
  ASSERT_EQ(plan.stages.size(), 3u);
  EXPECT_EQ(names(plan.stages[0].tiles), Names{});
  EXPECT_EQ(names(plan.stages[0].reductions), Names{"sm_max"});
  EXPECT_EQ(names(plan.stages[0].row_values), Names{});
  EXPECT_EQ(names(plan.stages[1].tiles), Names{"sm_exp"});
  EXPECT_EQ(names(plan.stages[1].reductions), Names{"sm_sum"});
  EXPECT_EQ(names(plan.stages[1].row_values), Names{});
  EXPECT_EQ(names(plan.stages[2].tiles), (Names{"sm", "Y"}));
  EXPECT_EQ(names(plan.stages[2].reductions), Names{});
  EXPECT_EQ(names(plan.carried_tiles), (Names{"mm", "sm_exp"}));
  EXPECT_TRUE(plan.epilogue_inputs.empty());
  // A reduction is evaluated in the stage whose tiles it reduces; its value is available from the next one.
  EXPECT_EQ(plan.stage(*plan.program.find("sm_max")), 1);
  EXPECT_EQ(plan.stage(*plan.program.find("sm_sum")), 2);
  EXPECT_EQ(plan.role(*plan.program.find("sm_sum")), Role::kRowValue);
}

TEST(FusionPlan, EpilogueInputsAndBroadcastsOfPostLayerNorm) {
  const FusionPlan plan = plan_of("post_layernorm", 64, 64, 64);
  ASSERT_EQ(plan.epilogue_inputs.size(), 4u);
  const struct {
    std::string name;
    Broadcast broadcast;
  } expected[] = {
      {"b", Broadcast::kRow}, {"R", Broadcast::kFull}, {"gamma", Broadcast::kRow}, {"beta", Broadcast::kRow}};
  for (std::size_t i = 0; i < std::size(expected); ++i) {
    EXPECT_EQ(plan.epilogue_inputs[i].tensor.name(), expected[i].name);
    EXPECT_EQ(plan.epilogue_inputs[i].broadcast, expected[i].broadcast) << expected[i].name;
  }
}

TEST(FusionPlan, RowMajorSecondOperand) {
  const Tensor X = te::placeholder({64, 32}, DType::f16, "X");
  const Tensor B = te::placeholder({32, 48}, DType::f16, "B");
  const Tensor C = te::matmul(X, B, te::BLayout::kRowMajor, "C");
  const FusionPlan plan = plan_fusion(te::Program({X, B}, {C}));
  EXPECT_FALSE(plan.anchor.b_k_major);
  EXPECT_EQ(plan.anchor.b.name(), "B");
  EXPECT_EQ(to_string(plan),
            "anchor C = X[M, K] x B[K, N]  M=64 N=48 K=32\n"
            "stage 0: tiles -; row values -; reductions -\n"
            "carried across reductions: -\n"
            "epilogue inputs: -\n");
  // The anchor itself is the program's output.
  EXPECT_EQ(plan.role(C), Role::kAnchor);
}

// GEMM, then x * sigmoid(x), then each row divided by its largest |x|: written only with primitives.
struct SiluRowMax {
  static constexpr std::int64_t M = 96, K = 64, N = 200;
  Tensor X = te::placeholder({M, K}, DType::bf16, "X");
  Tensor W = te::placeholder({N, K}, DType::bf16, "W");
  Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  Tensor silu = te::compute(
      {M, N}, [&](Var i, Var j) { return mm(i, j) * te::sigmoid(mm(i, j)); }, "silu");
  Var c = te::reduce_axis(N, "c");
  Tensor amax = te::compute(
      {M}, [&](Var i) { return te::max_reduce(te::abs(silu(i, c)), {c}); }, "amax");
  Tensor scaled = te::compute(
      {M, N}, [&](Var i, Var j) { return silu(i, j) / amax(i); }, "scaled");
  Tensor Y = te::cast_to(scaled, DType::bf16, "Y");
  te::Program program{{X, W}, {Y}};
};

TEST(FusionPlan, OperatorWrittenInTheDsl) {
  const SiluRowMax op;
  const FusionPlan plan = plan_fusion(op.program);
  EXPECT_EQ(to_string(plan),
            "anchor mm = X[M, K] x W[N, K]  M=96 N=200 K=64\n"
            "stage 0: tiles silu; row values -; reductions amax\n"
            "stage 1: tiles scaled, Y; row values -; reductions -\n"
            "carried across reductions: silu\n"
            "epilogue inputs: -\n");
  EXPECT_EQ(plan.role(op.amax), Role::kRowValue);
  EXPECT_EQ(plan.stage(op.amax), 1);
  EXPECT_EQ(plan.role(op.scaled), Role::kTile);
  EXPECT_EQ(plan.stage(op.scaled), 1);
}

// The same operator with a per-row input, a row value that is not a reduction, a weighted row sum that
// reads a [N] input inside its reduction, and a row value and the anchor among the outputs.
struct RowValueOperator {
  static constexpr std::int64_t M = 64, K = 32, N = 128;
  Tensor X = te::placeholder({M, K}, DType::bf16, "X");
  Tensor W = te::placeholder({N, K}, DType::bf16, "W");
  Tensor s = te::placeholder({M}, DType::f32, "s");
  Tensor w = te::placeholder({N}, DType::bf16, "w");
  Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  Tensor t = te::compute(
      {M, N}, [&](Var i, Var j) { return mm(i, j) * s(i); }, "t");
  Var c = te::reduce_axis(N, "c");
  Tensor wsum = te::compute(
      {M}, [&](Var i) { return te::sum(t(i, c) * te::cast(DType::f32, w(c)), {c}); }, "wsum");
  Tensor inv = te::compute(
      {M}, [&](Var i) { return 1.0 / (wsum(i) + s(i)); }, "inv");
  Tensor out = te::compute(
      {M, N}, [&](Var i, Var j) { return t(i, j) * inv(i); }, "out");
  Tensor Y = te::cast_to(out, DType::bf16, "Y");
  te::Program program{{X, W, s, w}, {Y, inv, mm}};
};

TEST(FusionPlan, RowValuesColumnInputsAndExtraOutputs) {
  const RowValueOperator op;
  const FusionPlan plan = plan_fusion(op.program);
  EXPECT_EQ(to_string(plan),
            "anchor mm = X[M, K] x W[N, K]  M=64 N=128 K=32\n"
            "stage 0: tiles t; row values -; reductions wsum\n"
            "stage 1: tiles out, Y; row values inv; reductions -\n"
            "carried across reductions: t\n"
            "epilogue inputs: s (column vector [M]) w (row vector [N])\n");
  EXPECT_EQ(plan.role(op.inv), Role::kRowValue);
  EXPECT_EQ(plan.stage(op.inv), 1);
  EXPECT_EQ(names(plan.stages[1].row_values), Names{"inv"});
}

// A row sum of a product, the natural way to write a mean square, is a row reduction, not a contraction.
TEST(FusionPlan, RowSumOfAProductIsNoContraction) {
  const Tensor X = te::placeholder({64, 32}, DType::bf16, "X");
  const Tensor W = te::placeholder({128, 32}, DType::bf16, "W");
  const Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const Var c = te::reduce_axis(128, "c");
  const Tensor ms = te::compute(
      {64}, [&](Var i) { return te::sum(mm(i, c) * mm(i, c), {c}) / 128.0; }, "ms");
  const Tensor y = te::compute(
      {64, 128}, [&](Var i, Var j) { return mm(i, j) * te::rsqrt(ms(i) + 1e-5); }, "y");
  const FusionPlan plan = plan_fusion(te::Program({X, W}, {y}));
  EXPECT_EQ(to_string(plan),
            "anchor mm = X[M, K] x W[N, K]  M=64 N=128 K=32\n"
            "stage 0: tiles -; row values -; reductions ms\n"
            "stage 1: tiles y; row values -; reductions -\n"
            "carried across reductions: mm\n"
            "epilogue inputs: -\n");
}

// Only a row reduction leaves the kernel: the last stage has nothing to compute and nothing is carried.
TEST(FusionPlan, RowReductionAsTheOnlyOutput) {
  const Tensor X = te::placeholder({100, 64}, DType::bf16, "X");
  const Tensor W = te::placeholder({300, 64}, DType::bf16, "W");
  const Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const Var c = te::reduce_axis(300, "c");
  const Tensor rowsum = te::compute(
      {100}, [&](Var i) { return te::sum(mm(i, c), {c}); }, "rowsum");
  const FusionPlan plan = plan_fusion(te::Program({X, W}, {rowsum}));
  EXPECT_EQ(to_string(plan),
            "anchor mm = X[M, K] x W[N, K]  M=100 N=300 K=64\n"
            "stage 0: tiles -; row values -; reductions rowsum\n"
            "stage 1: tiles -; row values -; reductions -\n"
            "carried across reductions: -\n"
            "epilogue inputs: -\n");
  EXPECT_TRUE(plan.has_reductions());
}

TEST(FusionPlan, SameProgramBuiltTwicePlansTheSame) {
  const FusionPlan a = plan_of("gemm_softcap_softmax", 256, 128, 512);
  const FusionPlan b = plan_of("gemm_softcap_softmax", 256, 128, 512);
  EXPECT_EQ(to_string(a), to_string(b));
  EXPECT_EQ(a.roles, b.roles);
  EXPECT_EQ(a.stage_of, b.stage_of);
}

TEST(FusionPlan, SuiteShapes) {
  const FusionPlan plan = plan_of("post_layernorm", 16384, 1024, 1024);
  EXPECT_EQ(plan.anchor.m, 16384);
  EXPECT_EQ(plan.anchor.n, 1024);
  EXPECT_EQ(plan.anchor.k, 1024);
  EXPECT_EQ(to_string(plan_of("gemm_softmax", 4096, 4096, 32000)).substr(0, 48),
            "anchor mm = X[M, K] x W[N, K]  M=4096 N=32000 K=");
}

TEST(FusionPlan, Names) {
  EXPECT_EQ(role_name(Role::kInput), "input");
  EXPECT_EQ(role_name(Role::kAnchor), "anchor");
  EXPECT_EQ(role_name(Role::kTile), "tile");
  EXPECT_EQ(role_name(Role::kRowValue), "row");
  EXPECT_EQ(broadcast_name(Broadcast::kFull), "full [M, N]");
  EXPECT_EQ(broadcast_name(Broadcast::kRow), "row vector [N]");
  EXPECT_EQ(broadcast_name(Broadcast::kColumn), "column vector [M]");
}

}  // namespace
}  // namespace comfuse::schedule
