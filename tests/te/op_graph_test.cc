// The op graph: edges, producers/consumers, Boost's topological order and the Graphviz text.
#include "te/op_graph.h"

#include <gtest/gtest.h>

#include <sstream>

namespace comfuse::te {
namespace {

// X -> A -> C, X -> B -> C (a diamond), with C also reading X directly.
Program diamond() {
  auto X = placeholder({4}, DType::f32, "X");
  auto A = compute(
      {4}, [&](Var i) { return X(i) * 2.0; }, "A");
  auto B = compute(
      {4}, [&](Var i) { return exp(X(i)); }, "B");
  auto C = compute(
      {4}, [&](Var i) { return A(i) + B(i) + X(i) + A(i); }, "C");
  return Program({X}, {C});
}

std::vector<std::string> names(const std::vector<Tensor>& tensors) {
  std::vector<std::string> result;
  for (const Tensor& t : tensors) result.push_back(t.name());
  return result;
}

TEST(OpGraph, EdgesProducersConsumers) {
  Program program = diamond();
  OpGraph graph(program);
  EXPECT_EQ(boost::num_vertices(graph.graph()), 4u);
  EXPECT_EQ(boost::num_edges(graph.graph()), 5u);  // X->A, X->B, X->C, A->C, B->C; A read twice is one edge
  const Tensor C = *program.find("C");
  const Tensor X = *program.find("X");
  EXPECT_EQ(names(graph.producers(C)), (std::vector<std::string>{"X", "A", "B"}));
  EXPECT_EQ(names(graph.consumers(X)), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_TRUE(graph.consumers(C).empty());
}

TEST(OpGraph, TopologicalOrderPutsProducersFirst) {
  Program program = diamond();
  OpGraph graph(program);
  std::vector<std::size_t> position(program.tensors().size());
  const auto order = graph.topological_order();
  ASSERT_EQ(order.size(), program.tensors().size());
  for (std::size_t p = 0; p < order.size(); ++p) position[order[p]] = p;
  for (auto [it, end] = boost::edges(graph.graph()); it != end; ++it) {
    EXPECT_LT(position[boost::source(*it, graph.graph())], position[boost::target(*it, graph.graph())]);
  }
}

TEST(OpGraph, Graphviz) {
  OpGraph graph(diamond());
  std::ostringstream out;
  graph.write_graphviz(out);
  const std::string dot = out.str();
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("[label=\"X\\nf32[4]\",shape=box]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[label=\"C\\nf32[4]\",shape=ellipse,style=bold]"), std::string::npos) << dot;
  EXPECT_NE(dot.find("->"), std::string::npos);
}

}  // namespace
}  // namespace comfuse::te
