// Construction, traversal and Graphviz export of the op graph.
#include "te/op_graph.h"

#include <algorithm>
#include <boost/graph/graphviz.hpp>
#include <boost/graph/topological_sort.hpp>
#include <set>

#include "te/printer.h"

namespace comfuse::te {
namespace {}  // namespace

OpGraph::OpGraph(const Program& program) : program_(program), graph_(program.tensors().size()) {
  for (const Tensor& consumer : program_.tensors()) {
    for (const Tensor& producer : Program::reads_of(consumer)) {
      boost::add_edge(program_.index_of(producer), program_.index_of(consumer), graph_);
    }
  }
}

std::vector<OpGraph::Vertex> OpGraph::topological_order() const {
  std::vector<Vertex> reversed;
  boost::topological_sort(graph_, std::back_inserter(reversed));
  return {reversed.rbegin(), reversed.rend()};
}

std::vector<Tensor> OpGraph::producers(const Tensor& t) const {
  std::vector<Vertex> vertices;
  for (auto [it, end] = boost::in_edges(vertex(t), graph_); it != end; ++it) {
    vertices.push_back(boost::source(*it, graph_));
  }
  std::sort(vertices.begin(), vertices.end());
  std::vector<Tensor> result;
  for (Vertex v : vertices) result.push_back(tensor(v));
  return result;
}

std::vector<Tensor> OpGraph::consumers(const Tensor& t) const {
  std::vector<Vertex> vertices;
  for (auto [it, end] = boost::out_edges(vertex(t), graph_); it != end; ++it) {
    vertices.push_back(boost::target(*it, graph_));
  }
  std::sort(vertices.begin(), vertices.end());
  std::vector<Tensor> result;
  for (Vertex v : vertices) result.push_back(tensor(v));
  return result;
}

void OpGraph::write_graphviz(std::ostream& out) const {
  std::set<const TensorNode*> outputs;
  for (const Tensor& t : program_.outputs()) outputs.insert(t.get());
  auto vertex_writer = [&](std::ostream& os, Vertex v) {
    const Tensor& t = tensor(v);
    os << "[label=\"" << t.name() << "\\n" << type_to_string(t.dtype(), t.shape()) << "\"";
    os << (t.is_placeholder() ? ",shape=box" : ",shape=ellipse");
    if (outputs.count(t.get())) os << ",style=bold";
    os << "]";
  };
  boost::write_graphviz(out, graph_, vertex_writer);
}

}  // namespace comfuse::te
