// Every rejection of the program JSON parser, with its path-carrying message, and a mutation fuzz loop.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "support/error.h"
#include "te/json.h"
#include "te/random_program.h"

namespace comfuse::te {
namespace {

using nlohmann::json;

// tensors: [0] X bf16[4,8], [1] b f32[8], [2] A = f32(X) + b, [3] Z = A * f32(pow(i0 + 1, 2)),
// [4] R = sum over k of A(i0, k) * 0.5. Outputs Z and R.
Program base_program() {
  auto X = placeholder({4, 8}, DType::bf16, "X");
  auto b = placeholder({8}, DType::f32, "b");
  auto A = compute(
      {4, 8}, [&](Var i, Var j) { return cast(DType::f32, X(i, j)) + b(j); }, "A");
  auto Z = compute(
      {4, 8}, [&](Var i, Var j) { return A(i, j) * cast(DType::f32, pow(i + 1, 2)); }, "Z");
  auto k = reduce_axis(8, "k");
  auto R = compute(
      {4}, [&](Var i) { return sum(A(i, k) * 0.5, {k}); }, "R");
  return Program({X, b}, {Z, R});
}

json base() {
  return program_to_json(base_program());
}

std::string error_of_text(std::string_view text) {
  try {
    parse_program(text);
  } catch (const CompileError& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("<not a CompileError> ") + error.what();
  }
  return "<no error>";
}

std::string error_of(const json& j) {
  return error_of_text(j.dump());
}

// The error of the base program after `mutate`.
std::string error_after(const std::function<void(json&)>& mutate) {
  json j = base();
  mutate(j);
  return error_of(j);
}

void expect_contains(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos)
      << "message: " << message << "\nexpected to contain: " << part;
}

TEST(JsonError, BaseProgramParses) {
  EXPECT_EQ(error_of(base()), "<no error>");
  json j = base();
  ASSERT_EQ(j["tensors"][3]["name"], "Z");
  ASSERT_EQ(j["tensors"][4]["name"], "R");
}

TEST(JsonError, NotJson) {
  EXPECT_EQ(
      error_of_text(R"({"inputs": [})").rfind("program: not valid JSON: parse error at line 1, column 13", 0),
      0u)
      << error_of_text(R"({"inputs": [})");
  EXPECT_EQ(error_of_text("").rfind("program: not valid JSON: ", 0), 0u);
  std::string text = base().dump();
  text.replace(text.find(R"("name":"X")") + 8, 1, "\xff");
  const std::string message = error_of_text(text);
  EXPECT_EQ(message.rfind("program: not valid JSON: ", 0), 0u) << message;
  expect_contains(message, "UTF-8");
}

TEST(JsonError, RepeatedKey) {
  std::string text = base().dump();
  text.insert(1, R"("outputs":["Z"],)");
  EXPECT_EQ(error_of_text(text), "program: not valid JSON: key 'outputs' is repeated in one object");
}

TEST(JsonError, WrongTopLevel) {
  EXPECT_EQ(error_of_text("[1]"), "program: expected an object, got an array");
  EXPECT_EQ(error_of_text("null"), "program: expected an object, got null");
  EXPECT_EQ(error_after([](json& j) { j.erase("tensors"); }), "program: missing field 'tensors'");
  EXPECT_EQ(error_after([](json& j) { j["version"] = 1; }), "program: unknown field 'version'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"] = json::object(); }),
            "program.tensors: expected an array, got an object");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][1] = 3; }),
            "program.tensors[1]: expected an object, got 3");
}

TEST(JsonError, TensorFields) {
  EXPECT_EQ(error_after([](json& j) { j["tensors"][2]["colour"] = "red"; }),
            "program.tensors[2]: unknown field 'colour'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][2].erase("body"); }),
            "program.tensors[2]: missing field 'body'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["axes"] = json::array(); }),
            "program.tensors[0]: unknown field 'axes'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["kind"] = "variable"; }),
            "program.tensors[0].kind: unknown tensor kind 'variable' (expected placeholder or compute)");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"] = nullptr; }),
            "program.tensors[0].shape: expected an array, got null");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][2]["axes"][0] = ""; }),
            "program.tensors[2].axes[0]: an axis needs a name");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["axes"] = {"i0"}; }),
            "program.tensors[3].axes: 1 axes for 2-dimensional shape of compute 'Z'");
}

TEST(JsonError, Shapes) {
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][1] = -4; }),
            "program.tensors[0].shape[1]: expected a positive integer, got -4");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][0] = 4.5; }),
            "program.tensors[0].shape[0]: expected a positive integer, got 4.5");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][0] = 4.0; }),
            "program.tensors[0].shape[0]: expected a positive integer, got 4.0");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][0] = "4"; }),
            R"(program.tensors[0].shape[0]: expected a positive integer, got "4")");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][0] = true; }),
            "program.tensors[0].shape[0]: expected a positive integer, got true");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][0] = 4294967296; }),
            "program.tensors[0].shape[0]: integer 4294967296 is out of range [1, 2147483647]");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"][0] = 18446744073709551615ULL; }),
            "program.tensors[0].shape[0]: integer 18446744073709551615 is out of range [1, 2147483647]");
  // Beyond 64 bits the JSON parser reads a float.
  std::string text = base().dump();
  text.replace(text.find("[4,8]"), 5, "[99999999999999999999,8]");
  EXPECT_EQ(error_of_text(text), "program.tensors[0].shape[0]: expected a positive integer, got 1e+20");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["shape"] = json::array(); }),
            "program.tensors[0]: tensor 'X' has no axes: give it shape [1]");
}

TEST(JsonError, DtypesAndNames) {
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["dtype"] = "f64"; }),
            "program.tensors[0].dtype: unknown dtype 'f64' (expected f32, f16, bf16 or i32)");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][0]["dtype"] = "bool"; }),
            "program.tensors[0]: placeholder 'X' of dtype bool");
  EXPECT_EQ(
      error_after([](json& j) { j["tensors"][0]["name"] = "1x"; }),
      "program.tensors[0]: tensor name '1x' is not an identifier (letters, digits, '_', not first a digit)");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["name"] = "A"; }),
            "program.tensors[3].name: duplicate tensor name 'A' (first defined at program.tensors[2])");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["dtype"] = "bf16"; }),
            "program.tensors[3].dtype: compute 'Z' is declared bf16 but its body has dtype f32");
}

TEST(JsonError, UnknownOpCarriesTheFullPath) {
  EXPECT_EQ(error_after([](json& j) {
              j["tensors"][3]["body"]["a"]["indices"][1] = {{"op", "foo"}};
            }),
            "program.tensors[3].body.a.indices[1]: unknown op 'foo'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["op"] = 3; }),
            "program.tensors[3].body.op: expected a string, got 3");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["a"] = {1}; }),
            "program.tensors[3].body.a: expected an object, got an array");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["extra"] = 1; }),
            "program.tensors[3].body: unknown field 'extra'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"].erase("b"); }),
            "program.tensors[3].body: missing field 'b'");
}

TEST(JsonError, BuilderErrorsCarryThePath) {
  EXPECT_EQ(error_after([](json& j) { j["tensors"][1]["dtype"] = "bf16"; }),
            "program.tensors[2].body: dtype mismatch in add: f32 vs bf16 (insert a cast)");
  EXPECT_EQ(error_after([](json& j) {
              j["tensors"][3]["body"]["b"] = {
                  {"op", "select"},
                  {"cond", {{"op", "float"}, {"dtype", "f32"}, {"value", 1}}},
                  {"if_true", {{"op", "float"}, {"dtype", "f32"}, {"value", 1}}},
                  {"if_false", {{"op", "float"}, {"dtype", "f32"}, {"value", 2}}}};
            }),
            "program.tensors[3].body.b: select condition has dtype f32, expected bool (a comparison)");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["b"]["dtype"] = "bool"; }),
            "program.tensors[3].body.b: cast to bool: use a comparison instead");
  EXPECT_EQ(error_after([](json& j) {
              j["tensors"][3]["body"]["b"] = {{"op", "exp"},
                                              {"value", {{"op", "int"}, {"dtype", "i32"}, {"value", 1}}}};
            }),
            "program.tensors[3].body.b: exp of an i32 operand: expected a float dtype (insert a cast)");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["a"]["indices"].erase(1); }),
            "program.tensors[3].body.a: tensor 'A' has 2 axes but is read with 1 indices");
  EXPECT_EQ(error_after([](json& j) {
              j["tensors"][3]["body"]["a"]["indices"][0] = {{"op", "int"}, {"dtype", "i32"}, {"value", 4}};
            }),
            "program.tensors[3]: compute 'Z': index 0 of A[4, i1] ranges over [4, 4] but 'A' has extent 4 on "
            "axis 0");
  EXPECT_EQ(error_after([](json& j) {
              j["tensors"][2]["body"] = {
                  {"op", "lt"}, {"a", {{"op", "axis"}, {"index", 0}}}, {"b", {{"op", "axis"}, {"index", 1}}}};
            }),
            "program.tensors[2]: compute 'A': body has dtype bool; select a numeric value instead");
}

TEST(JsonError, Constants) {
  const auto int_constant = [](json& j) -> json& {
    return j["tensors"][3]["body"]["b"]["value"]["base"]["b"];
  };
  json probe = base();
  ASSERT_EQ(int_constant(probe)["op"], "int");
  EXPECT_EQ(error_after([&](json& j) { int_constant(j)["value"] = 2147483648; }),
            "program.tensors[3].body.b.value.base.b.value: integer 2147483648 is out of range [-2147483648, "
            "2147483647]");
  EXPECT_EQ(error_after([&](json& j) { int_constant(j)["value"] = 1.0; }),
            "program.tensors[3].body.b.value.base.b.value: expected an integer, got 1.0");
  EXPECT_EQ(error_after([&](json& j) { int_constant(j)["dtype"] = "f32"; }),
            "program.tensors[3].body.b.value.base.b.dtype: an int constant has dtype i32, not f32");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["b"]["value"]["exponent"] = 10000000000; }),
            "program.tensors[3].body.b.value.exponent: integer 10000000000 is out of range [-2147483648, "
            "2147483647]");
  EXPECT_EQ(
      error_after([](json& j) { j["tensors"][4]["body"]["body"]["b"]["value"] = "infinity"; }),
      R"(program.tensors[4].body.body.b.value: expected a number or "inf", "-inf", "nan", got "infinity")");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][4]["body"]["body"]["b"]["dtype"] = "i32"; }),
            "program.tensors[4].body.body.b.dtype: a float constant has dtype f32, f16 or bf16, not i32");
}

TEST(JsonError, Reads) {
  EXPECT_EQ(error_after([](json& j) { std::swap(j["tensors"][2], j["tensors"][3]); }),
            "program.tensors[2].body.a.tensor: tensor 'A' is read before its definition (list it earlier in "
            "tensors)");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["a"]["tensor"] = "Q"; }),
            "program.tensors[3].body.a.tensor: no tensor named 'Q'");
}

TEST(JsonError, AxesAndReduceAxes) {
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["a"]["indices"][1]["index"] = 2; }),
            "program.tensors[3].body.a.indices[1].index: axis 2 out of range: compute 'Z' has 2 axes");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][3]["body"]["a"]["indices"][1]["index"] = -1; }),
            "program.tensors[3].body.a.indices[1].index: integer -1 is out of range [0, 2147483647]");
  EXPECT_EQ(
      error_after([](json& j) { j["tensors"][4]["body"]["body"]["a"]["indices"][1]["index"] = 1; }),
      "program.tensors[4].body.body.a.indices[1].index: reduce axis 1 out of range: 1 reduce axes are bound "
      "at this point");
  EXPECT_EQ(error_after([](json& j) {
              json& r = j["tensors"][4];
              json read = r["body"]["body"]["a"];
              r["body"] = {{"op", "add"}, {"a", r["body"]}, {"b", read}};
            }),
            "program.tensors[4].body.b.indices[1]: reduce axis 0 ('k') used outside its reduction");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][4]["body"]["axes"][0]["extent"] = 0; }),
            "program.tensors[4].body.axes[0].extent: expected a positive integer, got 0");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][4]["body"]["axes"][0]["name"] = ""; }),
            "program.tensors[4].body.axes[0]: reduce axis needs a name");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][4]["body"]["axes"][0]["step"] = 1; }),
            "program.tensors[4].body.axes[0]: unknown field 'step'");
  EXPECT_EQ(error_after([](json& j) { j["tensors"][4]["body"]["reduce"] = "mean"; }),
            "program.tensors[4].body.reduce: unknown reduction 'mean' (expected sum, max or min)");
  EXPECT_EQ(error_after([](json& j) {
              j["tensors"][4]["body"]["axes"] = json::array();
              j["tensors"][4]["body"]["body"] = {{"op", "float"}, {"dtype", "f32"}, {"value", 1}};
            }),
            "program.tensors[4].body: empty reduction: sum over no reduce axes");
  EXPECT_EQ(error_after([](json& j) {
              json inner = j["tensors"][4]["body"];
              inner["axes"][0]["name"] = "r";
              inner["body"]["a"]["indices"][1]["index"] = 1;
              j["tensors"][4]["body"]["body"]["a"] = inner;
            }),
            "program.tensors[4].body: nested reduction in sum: split it into two computes");
}

TEST(JsonError, InputsAndOutputs) {
  EXPECT_EQ(error_after([](json& j) { j["outputs"][0] = "Q"; }), "program.outputs[0]: no tensor named 'Q'");
  EXPECT_EQ(error_after([](json& j) { j["inputs"][0] = 1; }), "program.inputs[0]: expected a string, got 1");
  EXPECT_EQ(error_after([](json& j) { j["inputs"][0] = "A"; }),
            "program.inputs[0]: 'A' is a compute, not a placeholder: only placeholders are inputs");
  EXPECT_EQ(error_after([](json& j) { j["outputs"][0] = "X"; }),
            "program.outputs[0]: 'X' is a placeholder, not a compute: only computes are outputs");
  EXPECT_EQ(error_after([](json& j) {
              j["outputs"] = {"Z", "Z"};
            }),
            "program.outputs[1]: 'Z' is listed twice");
  EXPECT_EQ(error_after([](json& j) {
              j["inputs"] = {"X", "b", "X"};
            }),
            "program.inputs[2]: 'X' is listed twice");
  EXPECT_EQ(error_after([](json& j) { j["inputs"] = {"X"}; }),
            "program.tensors[1]: placeholder 'b' is not listed in inputs");
  EXPECT_EQ(error_after([](json& j) { j["outputs"] = {"Z"}; }),
            "program.tensors[4]: compute 'R' is not used by any output");
  EXPECT_EQ(error_after([](json& j) { j["outputs"] = json::array(); }),
            "program.outputs: a program needs at least one output");
}

TEST(JsonError, DeepNestingIsAnErrorNotAStackOverflow) {
  json j = base();
  json body = j["tensors"][2]["body"];
  for (int level = 0; level < 600; ++level) body = {{"op", "neg"}, {"value", std::move(body)}};
  j["tensors"][2]["body"] = std::move(body);
  const std::string message = error_of(j);
  std::string path = "program.tensors[2].body";
  for (int level = 1; level <= kMaxJsonExprDepth; ++level) path += ".value";  // the node at level 513
  EXPECT_EQ(message, path + ": expression nested deeper than 512 levels");

  // Far deeper than any stack allows, as text: neither the JSON parser nor the reader recurses on it.
  constexpr int kLevels = 100000;
  std::string deep_arrays = std::string(kLevels, '[') + std::string(kLevels, ']');
  EXPECT_EQ(error_of_text(deep_arrays), "program: expected an object, got an array");
  std::string deep_expr;
  for (int level = 0; level < kLevels; ++level) deep_expr += R"({"op":"neg","value":)";
  deep_expr += R"({"op":"float","dtype":"f32","value":1})" + std::string(kLevels, '}');
  const std::string text = R"({"inputs":[],"outputs":["Y"],"tensors":[{"axes":["i0"],"body":)" + deep_expr +
                           R"(,"dtype":"f32","kind":"compute","name":"Y","shape":[2]}]})";
  expect_contains(error_of_text(text), ": expression nested deeper than 512 levels");
}

TEST(JsonError, TooManyTensors) {
  json j = base();
  for (int i = 0; i < 4097; ++i) {
    j["tensors"].push_back(
        {{"dtype", "f32"}, {"kind", "placeholder"}, {"name", "P" + std::to_string(i)}, {"shape", {1}}});
  }
  EXPECT_EQ(error_of(j), "program.tensors: 4102 tensors, more than the limit of 4096");
}

TEST(JsonError, ProgramFromJsonUsesTheOuterPath) {
  json j = base();
  j["tensors"][0]["shape"][1] = -4;
  try {
    program_from_json(j, "log[3].workload.program");
    ADD_FAILURE() << "no error";
  } catch (const CompileError& error) {
    EXPECT_STREQ(error.what(),
                 "log[3].workload.program.tensors[0].shape[1]: expected a positive integer, got -4");
  }
  // A json value built in C++ may hold strings that are not UTF-8; they are reported, not thrown as json
  // errors.
  j = base();
  j["tensors"][0]["kind"] = "\xff\xfe";
  try {
    program_from_json(j);
    ADD_FAILURE() << "no error";
  } catch (const CompileError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("program.tensors[0].kind: unknown tensor kind", 0), 0u)
        << error.what();
  }
}

// ---- Mutation fuzz: whatever the input, parsing succeeds or throws CompileError. ----

// Every value in `j`, by JSON pointer.
void collect_pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) collect_pointers(value, at / key, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) collect_pointers(j[i], at / i, out);
  }
}

// A change at the level of text: truncation, byte flips, a deletion or an insertion.
std::string mutate_text(std::string s, random_program_detail::Rng& rng) {
  if (s.empty()) return "{";
  const auto at = static_cast<std::size_t>(rng.below(static_cast<int>(s.size())));
  switch (rng.below(4)) {
    case 0:
      return s.substr(0, at);
    case 1:
      for (int flips = rng.between(1, 3); flips > 0; --flips) {
        s[static_cast<std::size_t>(rng.below(static_cast<int>(s.size())))] =
            static_cast<char>(rng.below(256));
      }
      return s;
    case 2:
      return s.erase(at, static_cast<std::size_t>(rng.between(1, 8)));
    default:
      return s.insert(at, rng.pick(std::vector<std::string>{"{", "]", ",", "\"", "-", "0", "1e999", "\xc3"}));
  }
}

// A change of one value of a JSON document: of type (anything into anything), within type (another op,
// dtype or tensor name, another small integer), of structure (a copy of another part, a removed or surplus
// field, a reordered or extended array).
void mutate_value(json& j, random_program_detail::Rng& rng) {
  std::vector<json::json_pointer> pointers;
  collect_pointers(j, json::json_pointer(), pointers);
  const json::json_pointer target = rng.pick(pointers);
  json& value = j[target];
  static const std::vector<json> kAnyValue = {nullptr,
                                              true,
                                              -1,
                                              0,
                                              1.5,
                                              -0.0,
                                              2147483648LL,
                                              "x",
                                              json::array(),
                                              json::object(),
                                              json::array({1}),
                                              json{{"op", "foo"}}};
  static const std::vector<std::string> kStrings = {
      "X0",   "X1",   "Y0",   "Y1",     "A",    "X",           "b",       "R",     "k",   "i32",    "f32",
      "bf16", "bool", "f16",  "sum",    "max",  "placeholder", "compute", "add",   "lt",  "select", "cast",
      "exp",  "pow",  "read", "reduce", "axis", "raxis",       "int",     "float", "inf", "nan"};
  switch (rng.below(6)) {
    case 0:
      value = rng.pick(kAnyValue);
      break;
    case 1:
      if (value.is_string()) value = rng.pick(kStrings);
      if (value.is_number_integer()) value = rng.between(-1, 8);
      break;
    case 2:
      value = json(j.at(rng.pick(pointers)));
      break;
    case 3:
      if (target != json::json_pointer() && j[target.parent_pointer()].is_object()) {
        j[target.parent_pointer()].erase(target.back());
      }
      break;
    case 4:
      if (value.is_object()) value["surplus"] = 1;
      if (value.is_array() && !value.empty()) value.push_back(json(value[0]));
      break;
    default:
      if (value.is_array() && value.size() > 1) {
        std::swap(value[static_cast<std::size_t>(rng.below(static_cast<int>(value.size())))], value[0]);
      }
      break;
  }
}

TEST(JsonError, MutatedProgramsParseOrThrowCompileError) {
  std::vector<std::string> seeds = {base().dump()};
  for (std::uint64_t seed = 0; seed < 8; ++seed) seeds.push_back(serialize(random_program(seed)));
  random_program_detail::Rng rng(2024);
  int parsed = 0, rejected = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string text = rng.pick(seeds);
    if (rng.percent(25)) {
      text = mutate_text(std::move(text), rng);
    } else {
      json j = json::parse(text);
      for (int stacked = rng.between(1, 3); stacked > 0; --stacked) mutate_value(j, rng);
      text = j.dump();
    }
    std::optional<Program> p;
    try {
      p = parse_program(text);
    } catch (const CompileError&) {
      ++rejected;
      continue;
    } catch (const std::exception& error) {
      ADD_FAILURE() << "not a CompileError: " << error.what() << "\ninput: " << text;
      continue;
    }
    ++parsed;
    // What parses is canonicalised: its text parses again to itself.
    const std::string canonical = serialize(*p);
    try {
      EXPECT_EQ(serialize(parse_program(canonical)), canonical) << text;
    } catch (const CompileError& error) {
      ADD_FAILURE() << "canonical text rejected: " << error.what() << "\n" << canonical;
    }
  }
  // The mix must exercise both outcomes, or it tests nothing.
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 500);
}

}  // namespace
}  // namespace comfuse::te
