// The dataflow graph of a program as a Boost.Graph: one vertex per tensor, an edge from each producer to
// each compute that reads it.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <ostream>
#include <vector>

#include "te/program.h"

namespace comfuse::te {

class OpGraph {
 public:
  /// Vertex v is program.tensors()[v]; parallel edges are not added (a tensor read twice is one edge).
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  using Vertex = Graph::vertex_descriptor;

  explicit OpGraph(const Program& program);

  const Graph& graph() const { return graph_; }
  const Tensor& tensor(Vertex v) const { return program_.tensors()[v]; }
  Vertex vertex(const Tensor& t) const { return program_.index_of(t); }

  /// Vertices in a topological order computed by Boost (producers before consumers).
  std::vector<Vertex> topological_order() const;
  /// The tensors `t` reads, and the computes that read `t`, in vertex order.
  std::vector<Tensor> producers(const Tensor& t) const;
  std::vector<Tensor> consumers(const Tensor& t) const;
  /// Graphviz text: inputs as boxes, computes as ellipses labelled with name, dtype and shape, outputs bold.
  void write_graphviz(std::ostream& out) const;

 private:
  Program program_;
  Graph graph_;
};

}  // namespace comfuse::te
