// Cutting a program: the two parts of a back-to-back MLP compose to the whole, and cut tensors become inputs.
#include "te/extract.h"

#include <gtest/gtest.h>

#include "te/error_of.h"
#include "te/interpreter.h"
#include "te/workloads.h"

namespace comfuse::te {
namespace {

TEST(Extract, TwoPartsOfAnMlpComposeToTheWhole) {
  const Program mlp = build_workload("mlp_gelu", {{"M", 9}, {"K", 16}, {"N", 24}, {"O", 8}});
  const Tensor H = *mlp.find("H");
  const Program first = extract(mlp, {}, {H});
  const Program second = extract(mlp, {H}, mlp.outputs());
  ASSERT_EQ(first.inputs().size(), 2u);  // X, W1
  EXPECT_EQ(first.inputs()[0].name(), "X");
  EXPECT_EQ(first.inputs()[1].name(), "W1");
  ASSERT_EQ(second.inputs().size(), 2u);  // H (now an input), W2
  EXPECT_EQ(second.inputs()[0].name(), "H");
  EXPECT_TRUE(second.inputs()[0].is_placeholder());
  EXPECT_EQ(second.inputs()[0].dtype(), DType::bf16);
  EXPECT_EQ(second.inputs()[1].name(), "W2");

  std::vector<HostBuffer> inputs;
  for (std::size_t i = 0; i < mlp.inputs().size(); ++i) {
    inputs.push_back(HostBuffer::random(mlp.inputs()[i].dtype(), mlp.inputs()[i].shape(), 5 + i));
  }
  const HostBuffer whole = evaluate(mlp, inputs).at(0);
  const HostBuffer hidden = evaluate(first, {inputs[0], inputs[1]}).at(0);
  const HostBuffer parts = evaluate(second, {hidden, inputs[2]}).at(0);
  ASSERT_EQ(whole.numel(), parts.numel());
  for (std::int64_t i = 0; i < whole.numel(); ++i) EXPECT_EQ(whole.get(i), parts.get(i)) << i;
}

TEST(Extract, WithoutACutTheProgramIsUnchanged) {
  const Program p = build_workload("post_layernorm", {{"M", 8}, {"K", 16}, {"N", 32}});
  const Program same = extract(p, {}, p.outputs());
  EXPECT_EQ(same.tensors().size(), p.tensors().size());
  for (std::size_t i = 0; i < p.tensors().size(); ++i) EXPECT_TRUE(same.tensors()[i].same_as(p.tensors()[i]));
}

TEST(Extract, Errors) {
  const Program p = build_workload("mlp_relu", {{"M", 8}, {"K", 16}, {"N", 32}, {"O", 8}});
  const Tensor stranger = placeholder({8}, DType::f32, "stranger");
  EXPECT_EQ(error_of([&] { extract(p, {stranger}, p.outputs()); }),
            "extract: cut tensor 'stranger' is not part of the program");
  EXPECT_EQ(error_of([&] { extract(p, {*p.find("X")}, p.outputs()); }),
            "extract: cut tensor 'X' is already an input");
  EXPECT_EQ(error_of([&] { extract(p, {}, {stranger}); }), "extract: output 'stranger' is not part of the program");
}

}  // namespace
}  // namespace comfuse::te
