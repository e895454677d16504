// The exact CompileError messages of program validation.
#include <gtest/gtest.h>

#include <string>

#include "support/error.h"
#include "te/error_of.h"
#include "te/program.h"

namespace comfuse::te {
namespace {

class ProgramErrorTest : public ::testing::Test {
 protected:
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Tensor w = placeholder({8}, DType::f32, "W");
  Tensor a = compute(
      {4, 8}, [&](Var i, Var j) { return x(i, j) * w(j); }, "A");
  Tensor b = compute(
      {4, 8}, [&](Var i, Var j) { return a(i, j) + 1.0; }, "B");
};

TEST_F(ProgramErrorTest, ValidProgramHasNoError) {
  EXPECT_EQ(error_of([&] { Program({x, w}, {b}); }), "<no error>");
}

TEST_F(ProgramErrorTest, NoOutputs) {
  EXPECT_EQ(error_of([&] { Program({x, w}, {}); }), "program has no outputs");
}

TEST_F(ProgramErrorTest, InputThatIsACompute) {
  EXPECT_EQ(error_of([&] { Program({x, w, a}, {b}); }), "program input 'A' is a compute, not a placeholder");
}

TEST_F(ProgramErrorTest, InputListedTwice) {
  EXPECT_EQ(error_of([&] { Program({x, w, x}, {b}); }), "program input 'X' is listed twice");
}

TEST_F(ProgramErrorTest, OutputThatIsAPlaceholder) {
  EXPECT_EQ(error_of([&] {
              Program({x, w}, {b, w});
            }),
            "program output 'W' is an input placeholder, not a compute");
}

TEST_F(ProgramErrorTest, OutputListedTwice) {
  EXPECT_EQ(error_of([&] { Program({x, w}, {b, a, b}); }), "program output 'B' is listed twice");
}

TEST_F(ProgramErrorTest, UndefinedInputOrOutput) {
  EXPECT_EQ(error_of([&] { Program({x, Tensor()}, {b}); }), "program input is an undefined tensor");
  EXPECT_EQ(error_of([&] { Program({x, w}, {Tensor()}); }), "program output is an undefined tensor");
}

TEST_F(ProgramErrorTest, TensorReadButNotAnInput) {
  EXPECT_EQ(error_of([&] { Program({x}, {b}); }), "tensor 'W' is read but is not an input of the program");
  EXPECT_EQ(error_of([&] { Program({}, {a}); }), "tensor 'X' is read but is not an input of the program");
}

TEST_F(ProgramErrorTest, TwoPlaceholdersWithOneName) {
  Tensor w2 = placeholder({8}, DType::f32, "W");
  Tensor c = compute(
      {4, 8}, [&](Var i, Var j) { return a(i, j) * w2(j); }, "C");
  EXPECT_EQ(error_of([&] { Program({x, w, w2}, {c}); }), "two distinct tensors are named 'W'");
}

TEST_F(ProgramErrorTest, TwoComputesWithOneName) {
  Tensor a2 = compute(
      {4, 8}, [&](Var i, Var j) { return x(i, j); }, "A");
  Tensor c = compute(
      {4, 8}, [&](Var i, Var j) { return a(i, j) + a2(i, j); }, "C");
  EXPECT_EQ(error_of([&] { Program({x, w}, {c}); }), "two distinct tensors are named 'A'");
}

TEST_F(ProgramErrorTest, UnusedInputNamedLikeAnotherTensor) {
  Tensor shadow = placeholder({2}, DType::f32, "B");
  EXPECT_EQ(error_of([&] { Program({x, w, shadow}, {b}); }), "two distinct tensors are named 'B'");
  Tensor u1 = placeholder({2}, DType::f32, "U"), u2 = placeholder({3}, DType::f32, "U");
  EXPECT_EQ(error_of([&] { Program({x, w, u1, u2}, {b}); }), "two distinct tensors are named 'U'");
}

TEST_F(ProgramErrorTest, ReduceAxisReusedAcrossComputes) {
  Var k = reduce_axis(8, "k");
  Tensor s = compute(
      {4}, [&](Var i) { return sum(x(i, k), {k}); }, "S");
  Tensor m = compute(
      {4}, [&](Var i) { return max_reduce(x(i, k), {k}) - s(i); }, "M");
  EXPECT_EQ(error_of([&] { Program({x}, {m}); }), "reduce axis 'k' is reused by computes 'S' and 'M'");
}

TEST_F(ProgramErrorTest, DistinctReduceAxesWithOneNameAreFine) {
  Var k1 = reduce_axis(8, "k"), k2 = reduce_axis(8, "k");
  Tensor s = compute(
      {4}, [&](Var i) { return sum(x(i, k1), {k1}); }, "S");
  Tensor m = compute(
      {4}, [&](Var i) { return max_reduce(x(i, k2), {k2}) - s(i); }, "M");
  EXPECT_EQ(error_of([&] { Program({x}, {m}); }), "<no error>");
}

}  // namespace
}  // namespace comfuse::te
