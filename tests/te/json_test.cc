// Canonical JSON of programs: byte-for-byte round trips of hand-built and random programs, and the format.
#include "te/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/error.h"
#include "te/equality.h"
#include "te/printer.h"
#include "te/random_program.h"

namespace comfuse::te {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Program small_gemm() {
  auto X = placeholder({4, 8}, DType::bf16, "X");
  auto W = placeholder({8, 3}, DType::bf16, "W");
  auto k = reduce_axis(8, "k");
  auto Y = compute(
      {4, 3}, [&](Var i, Var j) { return sum(cast(DType::f32, X(i, k)) * cast(DType::f32, W(k, j)), {k}); },
      "Y");
  return Program({X, W}, {Y});
}

// Every node kind, op and dtype of constant; non-finite and negative-zero floats; two reductions whose axes
// share a name; broadcasts; an unused input; two outputs.
Program every_node_kind() {
  auto X = placeholder({4, 8}, DType::bf16, "X");
  auto W = placeholder({8, 3}, DType::f16, "W");
  auto b = placeholder({3}, DType::f32, "b");
  auto n = placeholder({4}, DType::i32, "n");
  auto unused = placeholder({2}, DType::f32, "unused");
  auto k = reduce_axis(8, "k");
  auto k_again = reduce_axis(8, "k");
  auto S = compute(
      {4, 3},
      [&](Var i, Var j) {
        Expr dot = sum(cast(DType::f32, X(i, k)) * cast(DType::f32, W(k, j)), {k});
        Expr row_max = max_reduce(cast(DType::f32, X(i, k_again)), {k_again});
        return dot - row_max + b(j);
      },
      "S");
  auto T = compute(
      {4, 3},
      [&](Var i, Var j) {
        Expr s = S(3 - Expr(i), min(j, Expr(2)));
        Expr unaries = exp(s) + log(s) + tanh(s) + erf(s) + sqrt(s) + rsqrt(s) + sigmoid(s) + abs(s) + -s;
        Expr binaries = min(s, Expr(0.5)) + max(s, Expr(-0.0)) + s / 3.0 + s * s;
        Expr compares = select(s < kInf, s, Expr(-kInf)) + select(s <= 0.1, s, Expr(kNaN)) +
                        select(s > 1e30, s, Expr(1.0)) + select(s >= -1.0, s, Expr(2.0)) +
                        select(Expr(i) == 1, s, Expr(3.0)) + select(Expr(j) != Expr(i), s, Expr(4.0));
        Expr low_precision = cast(DType::f32, cast(DType::bf16, s) * constant(DType::bf16, 0.1) +
                                                  constant(DType::bf16, kInf)) +
                             cast(DType::f32, cast(DType::f16, s) - constant(DType::f16, 65504.0));
        Expr ints = pow(n(i), 2) + -n(i) + abs(n(i) - 7) / 2 + cast(DType::i32, s) + (Expr(i) * 2 + j);
        return pow(unaries, -2) + binaries + compares + low_precision + cast(DType::f32, ints);
      },
      "T");
  auto r = reduce_axis(3, "r");
  auto U = compute(
      {4}, [&](Var i) { return min_reduce(T(i, r), {r}); }, "U");
  return Program({X, W, b, n, unused}, {U, S});
}

void expect_round_trip(const Program& p, const std::string& what) {
  SCOPED_TRACE(what);
  const std::string text = serialize(p);
  Program parsed = [&] {
    try {
      return parse_program(text);
    } catch (const CompileError& error) {
      ADD_FAILURE() << "parse failed: " << error.what() << "\n" << text;
      return p;
    }
  }();
  EXPECT_EQ(serialize(parsed), text);
  EXPECT_TRUE(structural_equal(parsed, p)) << to_string(p) << "\nvs\n" << to_string(parsed);
  EXPECT_EQ(structural_hash(parsed), structural_hash(p));
  EXPECT_EQ(workload_key(parsed), workload_key(p));
  EXPECT_EQ(to_string(parsed), to_string(p));
  EXPECT_EQ(program_to_json(p), nlohmann::json::parse(text));
}

TEST(Json, SmallGemmHasThePinnedCanonicalText) {
  // The exact format: sorted keys, no whitespace, integers as integers. Changing it changes every workload
  // key.
  EXPECT_EQ(
      serialize(small_gemm()),
      R"({"inputs":["X","W"],"outputs":["Y"],"tensors":[)"
      R"({"dtype":"bf16","kind":"placeholder","name":"X","shape":[4,8]},)"
      R"({"dtype":"bf16","kind":"placeholder","name":"W","shape":[8,3]},)"
      R"({"axes":["i0","i1"],"body":{"axes":[{"extent":8,"name":"k"}],"body":{"a":{"dtype":"f32","op":"cast",)"
      R"("value":{"indices":[{"index":0,"op":"axis"},{"index":0,"op":"raxis"}],"op":"read","tensor":"X"}},)"
      R"("b":{"dtype":"f32","op":"cast","value":{"indices":[{"index":0,"op":"raxis"},{"index":1,"op":"axis"}],)"
      R"("op":"read","tensor":"W"}},"op":"mul"},"op":"reduce","reduce":"sum"},"dtype":"f32","kind":"compute",)"
      R"("name":"Y","shape":[4,3]}]})");
}

TEST(Json, HandBuiltProgramsRoundTrip) {
  expect_round_trip(small_gemm(), "small_gemm");
  expect_round_trip(every_node_kind(), "every_node_kind");
}

TEST(Json, EveryNodeKindProgramWritesEveryOp) {
  const std::string text = serialize(every_node_kind());
  for (const char* op :
       {"int", "float", "axis", "raxis", "add",  "sub",   "mul",     "div",  "min",  "max",
        "lt",  "le",    "gt",   "ge",    "eq",   "ne",    "select",  "cast", "neg",  "abs",
        "exp", "log",   "tanh", "erf",   "sqrt", "rsqrt", "sigmoid", "pow",  "read", "reduce"}) {
    EXPECT_NE(text.find(std::string(R"("op":")") + op + '"'), std::string::npos) << op;
  }
  for (const char* reduction : {"sum", "max", "min"}) {
    EXPECT_NE(text.find(std::string(R"("reduce":")") + reduction + '"'), std::string::npos) << reduction;
  }
  for (const char* value : {R"("value":"inf")", R"("value":"-inf")", R"("value":"nan")", R"("value":-0.0)",
                            R"({"dtype":"bf16","op":"float","value":0.10009765625})",
                            R"({"dtype":"f16","op":"float","value":65504.0})", R"("exponent":-2)"}) {
    EXPECT_NE(text.find(value), std::string::npos) << value;
  }
}

TEST(Json, ReduceAxesAreNumberedInBindingOrder) {
  // S binds k (sum) then k (max): the second reduction's axis is raxis 1 although both are named k.
  const nlohmann::json j = program_to_json(every_node_kind());
  const nlohmann::json* s = nullptr;
  for (const auto& t : j["tensors"]) {
    if (t["name"] == "S") s = &t;
  }
  ASSERT_NE(s, nullptr);
  const auto& max_reduce = (*s)["body"]["a"]["b"];
  EXPECT_EQ(max_reduce["reduce"], "max");
  EXPECT_EQ(max_reduce["axes"][0]["name"], "k");
  EXPECT_EQ(max_reduce["body"]["value"]["indices"][1], (nlohmann::json{{"op", "raxis"}, {"index", 1}}));
}

TEST(Json, FloatsRoundTripExactly) {
  const double values[] = {0.1, 1.0 / 3.0, -0.0, 1e-45, 3.4028234663852886e38, 123456.789, 5e-324};
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (double value : values) {
      auto X = placeholder({2}, dtype, "X");
      auto Y = compute(
          {2}, [&](Var i) { return X(i) + constant(dtype, value); }, "Y");
      Program p({X}, {Y});
      Program q = parse_program(serialize(p));
      const double original = round_to_dtype(value, dtype);
      const double parsed = q.outputs()[0]->body.as<BinaryNode>()->b.as<FloatImmNode>()->value;
      EXPECT_EQ(std::memcmp(&original, &parsed, sizeof parsed), 0) << value << " " << dtype_name(dtype);
      EXPECT_EQ(serialize(q), serialize(p));
    }
  }
  // 0.1 as f32 is 0.100000001490116119384765625: the shortest double text that reads back is written.
  auto X = placeholder({2}, DType::f32, "X");
  auto Y = compute(
      {2}, [&](Var i) { return X(i) * 0.1; }, "Y");
  EXPECT_NE(serialize(Program({X}, {Y})).find(R"("value":0.10000000149011612)"), std::string::npos);
}

TEST(Json, NaNsOfAnySignOrPayloadAreOneConstant) {
  auto X = placeholder({2}, DType::f32, "X");
  auto Y = compute(
      {2}, [&](Var i) { return X(i) + constant(DType::f32, -std::nan("7")); }, "Y");
  Program p({X}, {Y});
  expect_round_trip(p, "negative NaN with payload");
}

TEST(Json, I32Extremes) {
  auto X = placeholder({2}, DType::i32, "X");
  auto Y = compute(
      {2}, [&](Var i) { return X(i) + constant(DType::i32, -2147483648.0) - 2147483647; }, "Y");
  Program p({X}, {Y});
  expect_round_trip(p, "i32 extremes");
  EXPECT_NE(serialize(p).find("-2147483648"), std::string::npos);
}

TEST(Json, RandomProgramsRoundTrip) {
  for (std::uint64_t seed = 0; seed < 250; ++seed) {
    expect_round_trip(random_program(seed), "seed " + std::to_string(seed));
  }
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    expect_round_trip(random_program(seed, {.max_depth = 5, .bounded = true}),
                      "bounded seed " + std::to_string(seed));
  }
}

TEST(Json, NonCanonicalTextParsesToTheCanonicalProgram) {
  // Whitespace, key order, integer-valued floats and an unrounded constant are accepted; the output is
  // canonical.
  const std::string text = R"({ "tensors": [
      {"shape": [4], "name": "X", "kind": "placeholder", "dtype": "bf16"},
      {"kind": "compute", "name": "Y", "dtype": "bf16", "shape": [4], "axes": ["i0"],
       "body": {"op": "mul", "b": {"value": 0.1, "dtype": "bf16", "op": "float"},
                "a": {"tensor": "X", "op": "read", "indices": [{"op": "axis", "index": 0}]}}}],
    "outputs": ["Y"], "inputs": ["X"] })";
  Program p = parse_program(text);
  auto X = placeholder({4}, DType::bf16, "X");
  auto Y = compute(
      {4}, [&](Var i) { return X(i) * 0.1; }, "Y");
  Program expected({X}, {Y});
  EXPECT_TRUE(structural_equal(p, expected));
  EXPECT_EQ(serialize(p), serialize(expected));
  EXPECT_NE(serialize(p).find("0.10009765625"), std::string::npos);
}

TEST(Json, TensorsMayBeListedInAnyTopologicalOrder) {
  // Two independent branches listed in the other order than the canonical one still give the canonical text.
  auto X = placeholder({3}, DType::f32, "X");
  auto A = compute(
      {3}, [&](Var i) { return X(i) + 1; }, "A");
  auto B = compute(
      {3}, [&](Var i) { return X(i) * 2; }, "B");
  auto C = compute(
      {3}, [&](Var i) { return A(i) - B(i); }, "C");
  Program p({X}, {C});
  nlohmann::json j = program_to_json(p);
  std::swap(j["tensors"][1], j["tensors"][2]);
  ASSERT_EQ(j["tensors"][1]["name"], "B");
  Program q = parse_program(j.dump());
  EXPECT_EQ(serialize(q), serialize(p));
}

TEST(Json, ProgramFromJsonReadsAnEmbeddedObject) {
  nlohmann::json record = {{"workload", {{"program", program_to_json(small_gemm())}}}};
  Program p = program_from_json(record["workload"]["program"], "record.workload.program");
  EXPECT_TRUE(structural_equal(p, small_gemm()));
}

TEST(Json, ExpressionsAtTheDepthLimitParse) {
  auto X = placeholder({2}, DType::f32, "X");
  auto Y = compute(
      {2},
      [&](Var i) {
        Expr e = X(i);  // 511 negations: the read is at level 512, its index at 513
        for (int level = 1; level < kMaxJsonExprDepth; ++level) e = -e;
        return e;
      },
      "Y");
  Program p({X}, {Y});
  EXPECT_THROW(parse_program(serialize(p)), CompileError);
  auto Z = compute(
      {2},
      [&](Var i) {
        Expr e = X(i);  // 510 negations: the index of the read is at level 512
        for (int level = 1; level < kMaxJsonExprDepth - 1; ++level) e = -e;
        return e;
      },
      "Z");
  expect_round_trip(Program({X}, {Z}), "deepest accepted");
}

// ---- The generator itself: valid, reproducible, and covering every node kind and op. ----

struct Coverage {
  std::set<ExprKind> kinds;
  std::set<std::string> ops;
  std::set<DType> constant_dtypes;
  bool broadcast = false;
  bool shared_reduce_name = false;

  void tensor(const Tensor& t) {
    if (t.is_placeholder()) return;
    reduce_names_.clear();
    expr(t->body, t.shape().size());
  }

  void expr(const Expr& e, std::size_t rank) {
    kinds.insert(e.kind());
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
        constant_dtypes.insert(e.dtype());
        break;
      case ExprKind::kBinary:
        ops.insert(std::string(binary_op_name(e.as<BinaryNode>()->op)));
        break;
      case ExprKind::kCompare:
        ops.insert(std::string(compare_op_name(e.as<CompareNode>()->op)));
        break;
      case ExprKind::kUnary:
        ops.insert(std::string(unary_op_name(e.as<UnaryNode>()->op)));
        break;
      case ExprKind::kReduce:
        ops.insert("reduce_" + std::string(reduce_op_name(e.as<ReduceNode>()->op)));
        for (const Var& axis : e.as<ReduceNode>()->axes) {
          shared_reduce_name = shared_reduce_name || !reduce_names_.insert(axis.name()).second;
        }
        break;
      case ExprKind::kRead:
        broadcast = broadcast || e.as<ReadNode>()->indices.size() < rank;
        break;
      case ExprKind::kVar:
      case ExprKind::kSelect:
      case ExprKind::kCast:
      case ExprKind::kPow:
        break;
    }
    for_each_child(e, [&](const Expr& child) { expr(child, rank); });
  }

 private:
  std::set<std::string> reduce_names_;
};

TEST(RandomProgram, CoversEveryNodeKindAndOp) {
  for (bool bounded : {false, true}) {
    Coverage coverage;
    for (std::uint64_t seed = 0; seed < 250; ++seed) {
      const Program p = random_program(seed, {.bounded = bounded});
      for (const Tensor& t : p.tensors()) coverage.tensor(t);
    }
    EXPECT_EQ(coverage.kinds.size(), 11u) << "bounded=" << bounded;
    EXPECT_EQ(coverage.ops.size(), 6u + 6u + 9u + 3u) << "bounded=" << bounded;
    EXPECT_EQ(coverage.constant_dtypes, (std::set<DType>{DType::f32, DType::f16, DType::bf16, DType::i32}));
    EXPECT_TRUE(coverage.broadcast);
    EXPECT_TRUE(coverage.shared_reduce_name);
  }
}

TEST(RandomProgram, IsReproducibleAndVaries) {
  std::set<std::string> texts;
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const std::string text = serialize(random_program(seed));
    EXPECT_EQ(serialize(random_program(seed)), text);
    texts.insert(text);
  }
  EXPECT_GE(texts.size(), 49u);
  EXPECT_NE(serialize(random_program(3)), serialize(random_program(3, {.bounded = true})));
}

TEST(RandomProgram, HasOneToThreeInputsAndOneOrTwoOutputs) {
  std::set<std::size_t> input_counts, output_counts;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    Program p = random_program(seed);
    input_counts.insert(p.inputs().size());
    output_counts.insert(p.outputs().size());
    for (const Tensor& t : p.tensors()) {
      for (std::int64_t extent : t.shape()) EXPECT_TRUE(extent >= 1 && extent <= 7);
    }
  }
  EXPECT_EQ(input_counts, (std::set<std::size_t>{1, 2, 3}));
  EXPECT_EQ(output_counts, (std::set<std::size_t>{1, 2}));
}

}  // namespace
}  // namespace comfuse::te
