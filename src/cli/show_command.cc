// Implementation of `comfuse show`.
#include "cli/show_command.h"

#include <fstream>

#include "support/error.h"
#include "te/json.h"
#include "te/op_graph.h"
#include "te/printer.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

constexpr const char* kUsage =
    "usage: comfuse show --list\n"
    "       comfuse show WORKLOAD [--shape M=…,K=…,N=…] [--dot FILE]\n";

int list_workloads(std::ostream& out) {
  for (const te::WorkloadInfo& info : te::workloads()) {
    te::Shape defaults;
    for (const te::ShapeParam& param : info.default_shape) defaults[param.name] = param.value;
    out << info.name << " " << te::format_shape(info, defaults) << "  " << info.summary << "\n";
  }
  return 0;
}

}  // namespace

int run_show(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() == 1 && args[0] == "--list") return list_workloads(out);
  std::string workload, shape_text, dot_file;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if ((arg == "--shape" || arg == "--dot") && i + 1 < args.size()) {
      (arg == "--shape" ? shape_text : dot_file) = args[++i];
    } else if (!arg.empty() && arg[0] != '-' && workload.empty()) {
      workload = arg;
    } else {
      err << "comfuse show: unexpected argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (workload.empty()) {
    err << kUsage;
    return 2;
  }
  try {
    const te::Shape shape = shape_text.empty() ? te::Shape{} : te::parse_shape(shape_text);
    const te::Program program = te::build_workload(workload, shape);
    const te::OpGraph graph(program);
    out << "workload " << workload << "\n";
    out << "key " << te::workload_key(program) << "\n\n";
    out << "program:\n" << te::to_string(program) << "\n";
    out << "op graph (topological order):\n";
    for (te::OpGraph::Vertex v : graph.topological_order()) {
      const te::Tensor& t = graph.tensor(v);
      out << "  " << t.name() << " <-";
      const auto producers = graph.producers(t);
      if (producers.empty()) out << " (input)";
      for (const te::Tensor& p : producers) out << " " << p.name();
      out << "\n";
    }
    if (!dot_file.empty()) {
      std::ofstream dot(dot_file);
      if (!dot) {
        err << "comfuse show: cannot write '" << dot_file << "'\n";
        return 2;
      }
      graph.write_graphviz(dot);
      out << "\ngraphviz written to " << dot_file << "\n";
    }
    return 0;
  } catch (const CompileError& error) {
    err << "comfuse show: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace comfuse::cli
