// Programs: canonical topological order, lookup by name and position, and the reads of a compute.
#include "te/program.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/error.h"

namespace comfuse::te {
namespace {

std::vector<std::string> names(const std::vector<Tensor>& tensors) {
  std::vector<std::string> out;
  for (const Tensor& t : tensors) out.push_back(t.name());
  return out;
}

using Names = std::vector<std::string>;

// X feeds A and B, which both feed C: a diamond.
struct Diamond {
  Tensor x, a, b, c;
};

Diamond diamond(bool build_b_first, bool c_reads_b_first) {
  Diamond d;
  d.x = placeholder({4, 8}, DType::f32, "X");
  const auto make_a = [&] {
    d.a = compute(
        {4, 8}, [&](Var i, Var j) { return exp(d.x(i, j)); }, "A");
  };
  const auto make_b = [&] {
    d.b = compute(
        {4, 8}, [&](Var i, Var j) { return d.x(i, j) * 2.0; }, "B");
  };
  if (build_b_first) {
    make_b();
    make_a();
  } else {
    make_a();
    make_b();
  }
  d.c = compute(
      {4, 8}, [&](Var i, Var j) { return c_reads_b_first ? d.b(i, j) - d.a(i, j) : d.a(i, j) - d.b(i, j); },
      "C");
  return d;
}

TEST(ProgramOrder, DiamondIsProducersFirstInOrderOfFirstRead) {
  Diamond d = diamond(false, false);
  Program p({d.x}, {d.c});
  EXPECT_EQ(names(p.tensors()), (Names{"X", "A", "B", "C"}));
}

TEST(ProgramOrder, FollowsTheBodyNotTheConstructionOrder) {
  Diamond built_b_first = diamond(true, false);
  EXPECT_EQ(names(Program({built_b_first.x}, {built_b_first.c}).tensors()), (Names{"X", "A", "B", "C"}));
  Diamond reads_b_first = diamond(false, true);
  EXPECT_EQ(names(Program({reads_b_first.x}, {reads_b_first.c}).tensors()), (Names{"X", "B", "A", "C"}));
}

TEST(ProgramOrder, OutputsAreWalkedInOrder) {
  Diamond d = diamond(false, false);
  EXPECT_EQ(names(Program({d.x}, {d.b, d.a}).tensors()), (Names{"X", "B", "A"}));
  EXPECT_EQ(names(Program({d.x}, {d.a, d.b}).tensors()), (Names{"X", "A", "B"}));
  // An output that is also an intermediate of an earlier output appears once, where the walk first meets it.
  EXPECT_EQ(names(Program({d.x}, {d.c, d.a}).tensors()), (Names{"X", "A", "B", "C"}));
}

TEST(ProgramOrder, InputOrderDoesNotReorderUsedInputs) {
  Tensor x = placeholder({4}, DType::f32, "X");
  Tensor w = placeholder({4}, DType::f32, "W");
  Tensor y = compute(
      {4}, [&](Var i) { return x(i) * w(i); }, "Y");
  EXPECT_EQ(names(Program({x, w}, {y}).tensors()), (Names{"X", "W", "Y"}));
  EXPECT_EQ(names(Program({w, x}, {y}).tensors()), (Names{"X", "W", "Y"}));
}

TEST(ProgramOrder, UnusedInputsAreKeptFirstInInputOrder) {
  Tensor x = placeholder({4}, DType::f32, "X");
  Tensor u1 = placeholder({2}, DType::f32, "U1");
  Tensor u2 = placeholder({3}, DType::bf16, "U2");
  Tensor y = compute(
      {4}, [&](Var i) { return x(i) + 1.0; }, "Y");
  Program p({u2, x, u1}, {y});
  EXPECT_EQ(names(p.tensors()), (Names{"U2", "U1", "X", "Y"}));
  EXPECT_EQ(names(p.inputs()), (Names{"U2", "X", "U1"}));
}

TEST(ProgramOrder, ReadsInsideReductionsAndIndicesCount) {
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Tensor idx = placeholder({4}, DType::i32, "Idx");
  Tensor m = compute(
      {4}, [&](Var i) { return x(i, 0); }, "M");
  Var k = reduce_axis(8, "k");
  // Y reads M, then X inside the reduction, then Idx inside X's index (a read comes before its indices);
  // X, as M's producer, comes before M.
  Tensor y = compute(
      {4}, [&](Var i) { return m(i) + sum(x(idx(i), k), {k}); }, "Y");
  EXPECT_EQ(names(Program({x, idx}, {y}).tensors()), (Names{"X", "M", "Idx", "Y"}));
}

TEST(ProgramOrder, LongChain) {
  Tensor x = placeholder({4}, DType::f32, "X");
  Tensor t = x;
  Names expected{"X"};
  for (int n = 0; n < 6; ++n) {
    const Tensor prev = t;
    const std::string name = "T" + std::to_string(n);
    t = compute(
        {4}, [&](Var i) { return prev(i) + 1.0; }, name);
    expected.push_back(name);
  }
  EXPECT_EQ(names(Program({x}, {t}).tensors()), expected);
}

TEST(ProgramOrder, IsTheSameForTwoBuildsOfOneProgram) {
  Diamond one = diamond(false, false), two = diamond(true, false);
  Program p1({one.x}, {one.c}), p2({two.x}, {two.c});
  EXPECT_EQ(names(p1.tensors()), names(p2.tensors()));
  EXPECT_FALSE(p1.tensors()[1].same_as(p2.tensors()[1]));
}

TEST(Program, KeepsInputsAndOutputsAsGiven) {
  Diamond d = diamond(false, false);
  Program p({d.x}, {d.c, d.b});
  ASSERT_EQ(p.inputs().size(), 1u);
  EXPECT_TRUE(p.inputs()[0].same_as(d.x));
  ASSERT_EQ(p.outputs().size(), 2u);
  EXPECT_TRUE(p.outputs()[0].same_as(d.c));
  EXPECT_TRUE(p.outputs()[1].same_as(d.b));
}

TEST(Program, FindByName) {
  Diamond d = diamond(false, false);
  Program p({d.x}, {d.c});
  ASSERT_TRUE(p.find("B").has_value());
  EXPECT_TRUE(p.find("B")->same_as(d.b));
  ASSERT_TRUE(p.find("X").has_value());
  EXPECT_TRUE(p.find("X")->same_as(d.x));
  EXPECT_FALSE(p.find("b").has_value());
  EXPECT_FALSE(p.find("").has_value());
}

TEST(Program, IndexOfIsThePositionInTensors) {
  Diamond d = diamond(false, false);
  Program p({d.x}, {d.c});
  EXPECT_EQ(p.index_of(d.x), 0u);
  EXPECT_EQ(p.index_of(d.a), 1u);
  EXPECT_EQ(p.index_of(d.b), 2u);
  EXPECT_EQ(p.index_of(d.c), 3u);
}

TEST(Program, IndexOfAForeignTensorIsAnInternalError) {
  Diamond d = diamond(false, false), other = diamond(false, false);
  Program p({d.x}, {d.c});
  EXPECT_THROW(p.index_of(other.a), InternalError);  // same name and structure, another tensor
}

TEST(Program, ReadsOfListsEachProducerOnceInOrderOfFirstAppearance) {
  Diamond d = diamond(false, true);
  EXPECT_EQ(names(Program::reads_of(d.c)), (Names{"B", "A"}));
  EXPECT_EQ(names(Program::reads_of(d.a)), (Names{"X"}));
  EXPECT_TRUE(Program::reads_of(d.x).empty());
  Tensor y = compute(
      {4, 8}, [&](Var i, Var j) { return d.x(i, j) * d.a(i, j) + d.x(0, j) * d.a(i, 0); }, "Y");
  const auto reads = Program::reads_of(y);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_TRUE(reads[0].same_as(d.x));
  EXPECT_TRUE(reads[1].same_as(d.a));
}

TEST(Program, ReadsOfAComputeWithoutReads) {
  Tensor iota = compute(
      {4}, [](Var i) { return cast(DType::f32, i); }, "Iota");
  EXPECT_TRUE(Program::reads_of(iota).empty());
  Program p({}, {iota});
  EXPECT_EQ(names(p.tensors()), (Names{"Iota"}));
}

}  // namespace
}  // namespace comfuse::te
