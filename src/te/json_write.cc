// Canonical JSON text of programs and the workload key.
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/sha256.h"
#include "te/json.h"

namespace comfuse::te {
namespace {

using nlohmann::json;

json float_value(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

json dtype_json(DType dtype) {
  return std::string(dtype_name(dtype));
}

// Writes one compute's body; variables become positions: axes by their index in the compute, reduce axes
// by their order of binding in a pre-order walk (the order the parser numbers them in).
class BodyWriter {
 public:
  explicit BodyWriter(const TensorNode& tensor) {
    for (std::size_t d = 0; d < tensor.axes.size(); ++d) axes_.emplace(tensor.axes[d].get(), d);
  }

  json expr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return {{"op", "int"}, {"dtype", dtype_json(e.dtype())}, {"value", e.as<IntImmNode>()->value}};
      case ExprKind::kFloatImm:
        return {{"op", "float"},
                {"dtype", dtype_json(e.dtype())},
                {"value", float_value(e.as<FloatImmNode>()->value)}};
      case ExprKind::kVar:
        return var(*e.as<VarNode>());
      case ExprKind::kBinary: {
        const auto* n = e.as<BinaryNode>();
        json a = expr(n->a);
        return {{"op", std::string(binary_op_name(n->op))}, {"a", std::move(a)}, {"b", expr(n->b)}};
      }
      case ExprKind::kCompare: {
        const auto* n = e.as<CompareNode>();
        json a = expr(n->a);
        return {{"op", std::string(compare_op_name(n->op))}, {"a", std::move(a)}, {"b", expr(n->b)}};
      }
      case ExprKind::kSelect: {
        const auto* n = e.as<SelectNode>();
        json cond = expr(n->cond);
        json if_true = expr(n->if_true);
        return {{"op", "select"},
                {"cond", std::move(cond)},
                {"if_true", std::move(if_true)},
                {"if_false", expr(n->if_false)}};
      }
      case ExprKind::kCast:
        return {{"op", "cast"}, {"dtype", dtype_json(e.dtype())}, {"value", expr(e.as<CastNode>()->value)}};
      case ExprKind::kUnary: {
        const auto* n = e.as<UnaryNode>();
        return {{"op", std::string(unary_op_name(n->op))}, {"value", expr(n->value)}};
      }
      case ExprKind::kPow: {
        const auto* n = e.as<PowNode>();
        return {{"op", "pow"}, {"base", expr(n->base)}, {"exponent", n->exponent}};
      }
      case ExprKind::kRead: {
        const auto* n = e.as<ReadNode>();
        json indices = json::array();
        for (const Expr& index : n->indices) indices.push_back(expr(index));
        return {{"op", "read"}, {"tensor", n->tensor->name}, {"indices", std::move(indices)}};
      }
      case ExprKind::kReduce: {
        const auto* n = e.as<ReduceNode>();
        json axes = json::array();
        for (const Var& axis : n->axes) {
          reduce_axes_.emplace(axis.get(), reduce_axes_.size());
          axes.push_back({{"extent", axis.extent()}, {"name", axis.name()}});
        }
        return {{"op", "reduce"},
                {"reduce", std::string(reduce_op_name(n->op))},
                {"axes", std::move(axes)},
                {"body", expr(n->body)}};
      }
    }
    throw InternalError("program_to_json: unknown expression kind");
  }

 private:
  json var(const VarNode& var) const {
    switch (var.var_kind) {
      case VarKind::kAxis: {
        auto it = axes_.find(&var);
        COMFUSE_CHECK(it != axes_.end(), "axis '" + var.name + "' is not an axis of its compute");
        return {{"op", "axis"}, {"index", it->second}};
      }
      case VarKind::kReduce: {
        auto it = reduce_axes_.find(&var);
        COMFUSE_CHECK(it != reduce_axes_.end(), "reduce axis '" + var.name + "' used before its reduction");
        return {{"op", "raxis"}, {"index", it->second}};
      }
    }
    throw InternalError("program_to_json: unknown variable kind");
  }

  std::map<const VarNode*, std::size_t> axes_;
  std::map<const VarNode*, std::size_t> reduce_axes_;
};

json tensor_json(const Tensor& t) {
  json j = {{"name", t.name()}, {"shape", t.shape()}, {"dtype", dtype_json(t.dtype())}};
  switch (t->kind) {
    case TensorKind::kPlaceholder:
      j["kind"] = "placeholder";
      return j;
    case TensorKind::kCompute: {
      j["kind"] = "compute";
      json axes = json::array();
      for (const Var& axis : t->axes) axes.push_back(axis.name());
      j["axes"] = std::move(axes);
      j["body"] = BodyWriter(*t.get()).expr(t->body);
      return j;
    }
  }
  throw InternalError("program_to_json: unknown tensor kind");
}

json names_json(const std::vector<Tensor>& tensors) {
  json names = json::array();
  for (const Tensor& t : tensors) names.push_back(t.name());
  return names;
}

}  // namespace

nlohmann::json program_to_json(const Program& program) {
  json tensors = json::array();
  for (const Tensor& t : program.tensors()) tensors.push_back(tensor_json(t));
  return {{"inputs", names_json(program.inputs())},
          {"outputs", names_json(program.outputs())},
          {"tensors", std::move(tensors)}};
}

std::string serialize(const Program& program) {
  const json j = program_to_json(program);
  try {
    return j.dump();
  } catch (const json::type_error& error) {
    // Tensor names are identifiers; only a reduce or axis name can hold bytes that are not UTF-8.
    throw CompileError(
        std::string("program cannot be written as JSON: a variable name is not valid UTF-8 (") +
        error.what() + ")");
  }
}

std::string workload_key(const Program& program) {
  return "sha256:" + sha256_hex(serialize(program));
}

}  // namespace comfuse::te
