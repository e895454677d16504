// Parsing programs from JSON through the validating builders, with errors that carry the JSON path.
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "support/error.h"
#include "te/json.h"

namespace comfuse::te {
namespace {

using nlohmann::json;

constexpr std::int64_t kMaxExtent = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMinI32 = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kMaxI32 = std::numeric_limits<std::int32_t>::max();

[[noreturn]] void fail(const std::string& path, const std::string& message) {
  throw CompileError(path + ": " + message);
}

// Runs a builder and prefixes its CompileError with the JSON path of the object being built.
template <typename F>
auto at(const std::string& path, F&& build) -> decltype(build()) {
  try {
    return build();
  } catch (const CompileError& error) {
    fail(path, error.what());
  }
}

// A value as a message shows it: scalars as JSON text (long strings cut), containers by their type only,
// so that describing a deeply nested value never recurses.
std::string describe(const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::discarded:
      return "nothing";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::string: {
      const auto& s = j.get_ref<const json::string_t&>();
      if (s.size() > 40)
        return json(s.substr(0, 40)).dump(-1, ' ', false, json::error_handler_t::replace) + "...";
      return j.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    case json::value_t::null:
    case json::value_t::boolean:
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return j.dump();
  }
  return "an unknown value";
}

const json& expect_object(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, "expected an object, got " + describe(j));
  return j;
}

const json& expect_array(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, "expected an array, got " + describe(j));
  return j;
}

const std::string& expect_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "expected a string, got " + describe(j));
  return j.get_ref<const json::string_t&>();
}

// Rejects any field of `object` not in `allowed`.
void check_fields(const json& object, const std::string& path,
                  std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) fail(path, "unknown field '" + key + "'");
  }
}

const json& field(const json& object, const char* name, const std::string& path) {
  auto it = object.find(name);
  if (it == object.end()) fail(path, std::string("missing field '") + name + "'");
  return *it;
}

// An integer in [lo, hi]. JSON numbers with a fraction or exponent, and integers beyond 64 bits (which the
// JSON parser reads as floats), are not integers.
std::int64_t expect_integer(const json& j, const std::string& path, std::int64_t lo, std::int64_t hi) {
  if (!j.is_number_integer()) {  // true for number_unsigned too
    fail(path, std::string(lo == 1 ? "expected a positive integer" : "expected an integer") + ", got " +
                   describe(j));
  }
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
    fail(path, "integer " + std::to_string(j.get<std::uint64_t>()) + " is out of range [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  const auto value = j.get<std::int64_t>();
  if (lo == 1 && value < 1) fail(path, "expected a positive integer, got " + std::to_string(value));
  if (value < lo || value > hi) {
    fail(path, "integer " + std::to_string(value) + " is out of range [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
  }
  return value;
}

DType expect_dtype(const json& j, const std::string& path) {
  const std::string& name = expect_string(j, path);
  auto dtype = parse_dtype(name);
  if (!dtype) fail(path, "unknown dtype '" + name + "' (expected f32, f16, bf16 or i32)");
  return *dtype;
}

double expect_float(const json& j, const std::string& path) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const json::string_t&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  fail(path, "expected a number or \"inf\", \"-inf\", \"nan\", got " + describe(j));
}

// The kinds of "op" and the node each builds; the names come from expr.h so they live in one place.
enum class OpForm : std::uint8_t {
  kInt,
  kFloat,
  kAxis,
  kReduceAxis,
  kBinary,
  kCompare,
  kSelect,
  kCast,
  kUnary,
  kPow,
  kRead,
  kReduce
};

struct OpInfo {
  OpForm form;
  int op = 0;  // the BinaryOp, CompareOp or UnaryOp
};

const std::map<std::string, OpInfo, std::less<>>& op_table() {
  static const auto table = [] {
    std::map<std::string, OpInfo, std::less<>> t{
        {"int", {OpForm::kInt}},          {"float", {OpForm::kFloat}},   {"axis", {OpForm::kAxis}},
        {"raxis", {OpForm::kReduceAxis}}, {"select", {OpForm::kSelect}}, {"cast", {OpForm::kCast}},
        {"pow", {OpForm::kPow}},          {"read", {OpForm::kRead}},     {"reduce", {OpForm::kReduce}}};
    auto add = [&](std::string_view name, OpInfo info) {
      COMFUSE_CHECK(t.emplace(std::string(name), info).second,
                    "two JSON ops are named '" + std::string(name) + "'");
    };
    for (BinaryOp op :
         {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kMin, BinaryOp::kMax}) {
      add(binary_op_name(op), {OpForm::kBinary, static_cast<int>(op)});
    }
    for (CompareOp op :
         {CompareOp::kLt, CompareOp::kLe, CompareOp::kGt, CompareOp::kGe, CompareOp::kEq, CompareOp::kNe}) {
      add(compare_op_name(op), {OpForm::kCompare, static_cast<int>(op)});
    }
    for (UnaryOp op : {UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kExp, UnaryOp::kLog, UnaryOp::kTanh,
                       UnaryOp::kErf, UnaryOp::kSqrt, UnaryOp::kRsqrt, UnaryOp::kSigmoid}) {
      add(unary_op_name(op), {OpForm::kUnary, static_cast<int>(op)});
    }
    return t;
  }();
  return table;
}

ReduceOp expect_reduce_op(const json& j, const std::string& path) {
  const std::string& name = expect_string(j, path);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    if (reduce_op_name(op) == name) return op;
  }
  fail(path, "unknown reduction '" + name + "' (expected sum, max or min)");
}

// Reads one compute's body. Reduce axes are numbered in the order they are bound, as the writer numbers them.
class BodyReader {
 public:
  BodyReader(const std::string& tensor, const std::vector<Var>& axes,
             const std::map<std::string, Tensor>& defined, const std::set<std::string>& all_names)
      : tensor_(tensor), axes_(axes), defined_(defined), all_names_(all_names) {}

  Expr expr(const json& j, const std::string& path, int depth) {
    if (depth > kMaxJsonExprDepth) {
      fail(path, "expression nested deeper than " + std::to_string(kMaxJsonExprDepth) + " levels");
    }
    expect_object(j, path);
    const std::string& op = expect_string(field(j, "op", path), path + ".op");
    auto it = op_table().find(op);
    if (it == op_table().end()) fail(path, "unknown op '" + op + "'");
    const OpInfo info = it->second;
    switch (info.form) {
      case OpForm::kInt: {
        check_fields(j, path, {"op", "dtype", "value"});
        const DType dtype = expect_dtype(field(j, "dtype", path), path + ".dtype");
        if (dtype != DType::i32) {
          fail(path + ".dtype", "an int constant has dtype i32, not " + std::string(dtype_name(dtype)));
        }
        const std::int64_t value = expect_integer(field(j, "value", path), path + ".value", kMinI32, kMaxI32);
        return at(path, [&] { return constant(DType::i32, static_cast<double>(value)); });
      }
      case OpForm::kFloat: {
        check_fields(j, path, {"op", "dtype", "value"});
        const DType dtype = expect_dtype(field(j, "dtype", path), path + ".dtype");
        if (!is_float(dtype)) {
          fail(path + ".dtype",
               "a float constant has dtype f32, f16 or bf16, not " + std::string(dtype_name(dtype)));
        }
        const double value = expect_float(field(j, "value", path), path + ".value");
        return at(path, [&] { return constant(dtype, value); });
      }
      case OpForm::kAxis: {
        check_fields(j, path, {"op", "index"});
        const std::int64_t index = expect_integer(field(j, "index", path), path + ".index", 0, kMaxI32);
        if (index >= static_cast<std::int64_t>(axes_.size())) {
          fail(path + ".index", "axis " + std::to_string(index) + " out of range: compute '" + tensor_ +
                                    "' has " + std::to_string(axes_.size()) + " axes");
        }
        return axes_[index];
      }
      case OpForm::kReduceAxis: {
        check_fields(j, path, {"op", "index"});
        const std::int64_t index = expect_integer(field(j, "index", path), path + ".index", 0, kMaxI32);
        if (index >= static_cast<std::int64_t>(reduce_axes_.size())) {
          fail(path + ".index", "reduce axis " + std::to_string(index) +
                                    " out of range: " + std::to_string(reduce_axes_.size()) +
                                    " reduce axes are bound at this point");
        }
        if (!in_scope_[index]) {
          fail(path, "reduce axis " + std::to_string(index) + " ('" + reduce_axes_[index].name() +
                         "') used outside its reduction");
        }
        return reduce_axes_[index];
      }
      case OpForm::kBinary:
      case OpForm::kCompare: {
        check_fields(j, path, {"op", "a", "b"});
        const json& a_json = field(j, "a", path);
        const json& b_json = field(j, "b", path);
        Expr a = expr(a_json, path + ".a", depth + 1);
        Expr b = expr(b_json, path + ".b", depth + 1);
        if (info.form == OpForm::kBinary)
          return at(path, [&] { return binary(static_cast<BinaryOp>(info.op), a, b); });
        return at(path, [&] { return compare(static_cast<CompareOp>(info.op), a, b); });
      }
      case OpForm::kSelect: {
        check_fields(j, path, {"op", "cond", "if_true", "if_false"});
        const json& cond_json = field(j, "cond", path);
        const json& true_json = field(j, "if_true", path);
        const json& false_json = field(j, "if_false", path);
        Expr cond = expr(cond_json, path + ".cond", depth + 1);
        Expr if_true = expr(true_json, path + ".if_true", depth + 1);
        Expr if_false = expr(false_json, path + ".if_false", depth + 1);
        return at(path, [&] { return select(cond, if_true, if_false); });
      }
      case OpForm::kCast: {
        check_fields(j, path, {"op", "dtype", "value"});
        const DType dtype = expect_dtype(field(j, "dtype", path), path + ".dtype");
        Expr value = expr(field(j, "value", path), path + ".value", depth + 1);
        return at(path, [&] { return cast(dtype, value); });
      }
      case OpForm::kUnary: {
        check_fields(j, path, {"op", "value"});
        Expr value = expr(field(j, "value", path), path + ".value", depth + 1);
        return at(path, [&] { return unary(static_cast<UnaryOp>(info.op), value); });
      }
      case OpForm::kPow: {
        check_fields(j, path, {"op", "base", "exponent"});
        const json& base_json = field(j, "base", path);
        const auto exponent = static_cast<int>(
            expect_integer(field(j, "exponent", path), path + ".exponent", kMinI32, kMaxI32));
        Expr base = expr(base_json, path + ".base", depth + 1);
        return at(path, [&] { return pow(base, exponent); });
      }
      case OpForm::kRead:
        return read(j, path, depth);
      case OpForm::kReduce:
        return reduction(j, path, depth);
    }
    throw InternalError("program_from_json: unknown op form");
  }

 private:
  Expr read(const json& j, const std::string& path, int depth) {
    check_fields(j, path, {"op", "tensor", "indices"});
    const std::string& name = expect_string(field(j, "tensor", path), path + ".tensor");
    const json& indices_json = expect_array(field(j, "indices", path), path + ".indices");
    auto it = defined_.find(name);
    if (it == defined_.end()) {
      if (all_names_.count(name)) {
        fail(path + ".tensor",
             "tensor '" + name + "' is read before its definition (list it earlier in tensors)");
      }
      fail(path + ".tensor", "no tensor named '" + name + "'");
    }
    std::vector<Expr> indices;
    for (std::size_t d = 0; d < indices_json.size(); ++d) {
      indices.push_back(expr(indices_json[d], path + ".indices[" + std::to_string(d) + "]", depth + 1));
    }
    return at(path, [&] { return it->second.read(std::move(indices)); });
  }

  Expr reduction(const json& j, const std::string& path, int depth) {
    check_fields(j, path, {"op", "reduce", "axes", "body"});
    const ReduceOp op = expect_reduce_op(field(j, "reduce", path), path + ".reduce");
    const std::string axes_path = path + ".axes";
    const json& axes_json = expect_array(field(j, "axes", path), axes_path);
    const json& body_json = field(j, "body", path);
    const std::size_t first = reduce_axes_.size();
    std::vector<Var> axes;
    for (std::size_t a = 0; a < axes_json.size(); ++a) {
      const std::string axis_path = axes_path + "[" + std::to_string(a) + "]";
      const json& axis_json = expect_object(axes_json[a], axis_path);
      check_fields(axis_json, axis_path, {"extent", "name"});
      const std::int64_t extent =
          expect_integer(field(axis_json, "extent", axis_path), axis_path + ".extent", 1, kMaxExtent);
      const std::string& name = expect_string(field(axis_json, "name", axis_path), axis_path + ".name");
      axes.push_back(at(axis_path, [&] { return reduce_axis(extent, name); }));
      reduce_axes_.push_back(axes.back());
      in_scope_.push_back(true);
    }
    Expr body = expr(body_json, path + ".body", depth + 1);
    for (std::size_t a = first; a < first + axes.size(); ++a) in_scope_[a] = false;
    return at(path, [&] { return reduce(op, body, axes); });
  }

  const std::string& tensor_;
  const std::vector<Var>& axes_;
  const std::map<std::string, Tensor>& defined_;
  const std::set<std::string>& all_names_;
  std::vector<Var> reduce_axes_;
  std::vector<bool> in_scope_;
};

class ProgramReader {
 public:
  Program read(const json& j, const std::string& path) {
    expect_object(j, path);
    check_fields(j, path, {"inputs", "outputs", "tensors"});
    const json& inputs_json = expect_array(field(j, "inputs", path), path + ".inputs");
    const json& outputs_json = expect_array(field(j, "outputs", path), path + ".outputs");
    const std::string tensors_path = path + ".tensors";
    const json& tensors_json = expect_array(field(j, "tensors", path), tensors_path);
    if (tensors_json.size() > kMaxJsonTensors) {
      fail(tensors_path, std::to_string(tensors_json.size()) + " tensors, more than the limit of " +
                             std::to_string(kMaxJsonTensors));
    }
    for (const json& t : tensors_json) {
      if (!t.is_object()) continue;
      auto name = t.find("name");
      if (name != t.end() && name->is_string()) all_names_.insert(name->get<std::string>());
    }
    std::vector<std::string> tensor_paths;
    for (std::size_t i = 0; i < tensors_json.size(); ++i) {
      tensor_paths.push_back(tensors_path + "[" + std::to_string(i) + "]");
      tensor(tensors_json[i], tensor_paths.back());
    }

    std::vector<Tensor> inputs = tensor_list(inputs_json, path + ".inputs", TensorKind::kPlaceholder);
    std::vector<Tensor> outputs = tensor_list(outputs_json, path + ".outputs", TensorKind::kCompute);
    if (outputs.empty()) fail(path + ".outputs", "a program needs at least one output");
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (!order_[i].is_placeholder()) continue;
      bool listed = false;
      for (const Tensor& input : inputs) listed = listed || input.same_as(order_[i]);
      if (!listed) fail(tensor_paths[i], "placeholder '" + order_[i].name() + "' is not listed in inputs");
    }
    Program program = at(path, [&] { return Program(std::move(inputs), std::move(outputs)); });
    for (std::size_t i = 0; i < order_.size(); ++i) {
      bool used = false;
      for (const Tensor& t : program.tensors()) used = used || t.same_as(order_[i]);
      if (!used) fail(tensor_paths[i], "compute '" + order_[i].name() + "' is not used by any output");
    }
    return program;
  }

 private:
  void tensor(const json& j, const std::string& path) {
    expect_object(j, path);
    const std::string& kind = expect_string(field(j, "kind", path), path + ".kind");
    const bool is_compute = kind == "compute";
    if (!is_compute && kind != "placeholder") {
      fail(path + ".kind", "unknown tensor kind '" + kind + "' (expected placeholder or compute)");
    }
    if (is_compute) {
      check_fields(j, path, {"axes", "body", "dtype", "kind", "name", "shape"});
    } else {
      check_fields(j, path, {"dtype", "kind", "name", "shape"});
    }
    const std::string& name = expect_string(field(j, "name", path), path + ".name");
    if (auto previous = defined_paths_.find(name); previous != defined_paths_.end()) {
      fail(path + ".name",
           "duplicate tensor name '" + name + "' (first defined at " + previous->second + ")");
    }
    const std::string shape_path = path + ".shape";
    const json& shape_json = expect_array(field(j, "shape", path), shape_path);
    std::vector<std::int64_t> shape;
    for (std::size_t d = 0; d < shape_json.size(); ++d) {
      shape.push_back(
          expect_integer(shape_json[d], shape_path + "[" + std::to_string(d) + "]", 1, kMaxExtent));
    }
    const DType dtype = expect_dtype(field(j, "dtype", path), path + ".dtype");
    Tensor t;
    if (is_compute) {
      t = compute(j, path, shape, name, dtype);
    } else {
      t = at(path, [&] { return placeholder(shape, dtype, name); });
    }
    defined_.emplace(name, t);
    defined_paths_.emplace(name, path);
    order_.push_back(t);
  }

  Tensor compute(const json& j, const std::string& path, const std::vector<std::int64_t>& shape,
                 const std::string& name, DType dtype) {
    const std::string axes_path = path + ".axes";
    const json& axes_json = expect_array(field(j, "axes", path), axes_path);
    const json& body_json = field(j, "body", path);
    if (axes_json.size() != shape.size()) {
      fail(axes_path, std::to_string(axes_json.size()) + " axes for " + std::to_string(shape.size()) +
                          "-dimensional shape of compute '" + name + "'");
    }
    std::vector<Var> axes;
    for (std::size_t d = 0; d < axes_json.size(); ++d) {
      const std::string axis_path = axes_path + "[" + std::to_string(d) + "]";
      const std::string& axis_name = expect_string(axes_json[d], axis_path);
      if (axis_name.empty()) fail(axis_path, "an axis needs a name");
      axes.emplace_back(std::make_shared<VarNode>(axis_name, shape[d], VarKind::kAxis));
    }
    Expr body = BodyReader(name, axes, defined_, all_names_).expr(body_json, path + ".body", /*depth=*/1);
    Tensor t = at(path, [&] { return make_compute(shape, axes, body, name); });
    if (t.dtype() != dtype) {
      fail(path + ".dtype", "compute '" + name + "' is declared " + std::string(dtype_name(dtype)) +
                                " but its body has dtype " + std::string(dtype_name(t.dtype())));
    }
    return t;
  }

  // The tensors named by "inputs" (placeholders) or "outputs" (computes), each once.
  std::vector<Tensor> tensor_list(const json& names, const std::string& path, TensorKind kind) const {
    std::vector<Tensor> tensors;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      const std::string& name = expect_string(names[i], item_path);
      auto it = defined_.find(name);
      if (it == defined_.end()) fail(item_path, "no tensor named '" + name + "'");
      const Tensor& t = it->second;
      if (kind == TensorKind::kPlaceholder && !t.is_placeholder()) {
        fail(item_path, "'" + name + "' is a compute, not a placeholder: only placeholders are inputs");
      }
      if (kind == TensorKind::kCompute && t.is_placeholder()) {
        fail(item_path, "'" + name + "' is a placeholder, not a compute: only computes are outputs");
      }
      for (const Tensor& previous : tensors) {
        if (previous.same_as(t)) fail(item_path, "'" + name + "' is listed twice");
      }
      tensors.push_back(t);
    }
    return tensors;
  }

  std::set<std::string> all_names_;
  std::map<std::string, Tensor> defined_;
  std::map<std::string, std::string> defined_paths_;
  std::vector<Tensor> order_;
};

// Rejects a key repeated within one object while the text is parsed (the parser would keep the last
// silently).
class DuplicateKeyCheck {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys_.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys_.pop_back();
        break;
      case json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const json::string_t&>();
        if (!keys_.back().insert(key).second) duplicate_ = key;
        break;
      }
      case json::parse_event_t::array_start:
      case json::parse_event_t::array_end:
      case json::parse_event_t::value:
        break;
    }
    return true;
  }
  const std::optional<std::string>& duplicate() const { return duplicate_; }

 private:
  std::vector<std::set<std::string>> keys_;
  std::optional<std::string> duplicate_;
};

}  // namespace

Program program_from_json(const nlohmann::json& json, const std::string& path) {
  try {
    return ProgramReader().read(json, path);
  } catch (const json::exception& error) {
    // Every access is checked first, so this is a bug; it still reaches the caller as the input's fault
    // with the library's message, because the input is what provoked it.
    throw CompileError(path + ": malformed program: " + error.what());
  }
}

json parse_json_text(std::string_view text) {
  // A shared_ptr keeps the state with the callback copies the parser makes.
  auto check = std::make_shared<DuplicateKeyCheck>();
  json j;
  try {
    j = json::parse(text.begin(), text.end(), [check](int depth, json::parse_event_t event, json& parsed) {
      return (*check)(depth, event, parsed);
    });
  } catch (const json::exception& error) {
    std::string message = error.what();
    // Drop the "[json.exception.parse_error.101] " prefix: the class name means nothing to a user.
    if (!message.empty() && message[0] == '[') {
      if (auto end = message.find("] "); end != std::string::npos) message = message.substr(end + 2);
    }
    throw CompileError("not valid JSON: " + message);
  }
  if (check->duplicate()) {
    throw CompileError("not valid JSON: key '" + *check->duplicate() + "' is repeated in one object");
  }
  return j;
}

Program parse_program(std::string_view text) {
  const std::string path = "program";
  json j;
  try {
    j = parse_json_text(text);
  } catch (const CompileError& error) {
    fail(path, error.what());
  }
  return program_from_json(j, path);
}

}  // namespace comfuse::te
