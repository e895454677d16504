// TE expressions lowered to CUDA C: the exact text of each node kind, 16-bit rounding, and float literals
// that read back exactly.
#include "codegen/expr_emitter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "support/error.h"
#include "te/tensor.h"

namespace comfuse::codegen {
namespace {

using te::DType;
using te::Expr;
using te::Tensor;
using te::Var;

// Scalars a and b (f32), h and g (bf16), p (f16), read from 1-D tensors at index i, plus the i32 variables
// i and j; each bound to a short C name.
struct Scope {
  Tensor ta = te::placeholder({4}, DType::f32, "ta");
  Tensor tb = te::placeholder({4}, DType::f32, "tb");
  Tensor th = te::placeholder({4}, DType::bf16, "th");
  Tensor tg = te::placeholder({4}, DType::bf16, "tg");
  Tensor tp = te::placeholder({4}, DType::f16, "tp");
  Var i, j;
  Expr a, b, h, g, p;
  ExprBindings bindings;

  Scope() {
    // Iteration variables come from a compute; keep them by capturing them from its body.
    te::compute(
        {4, 4},
        [&](Var vi, Var vj) {
          i = vi;
          j = vj;
          return te::cast(DType::f32, vi);
        },
        "vars");
    a = ta(i);
    b = tb(i);
    h = th(i);
    g = tg(i);
    p = tp(i);
    bindings.reads = {{ta.get(), "a"}, {tb.get(), "b"}, {th.get(), "h"}, {tg.get(), "g"}, {tp.get(), "p"}};
    bindings.vars = {{i.get(), "i"}, {j.get(), "j"}};
  }
  std::string c(const Expr& e) const { return emit_expr(e, bindings); }
};

TEST(ExprEmitter, F32Arithmetic) {
  const Scope s;
  EXPECT_EQ(s.c(s.a + s.b), "(a + b)");
  EXPECT_EQ(s.c(s.a - s.b), "(a - b)");
  EXPECT_EQ(s.c(s.a * s.b), "(a * b)");
  EXPECT_EQ(s.c(s.a / s.b), "(a / b)");
  EXPECT_EQ(s.c((s.a + 1.0) * 0.5), "((a + (1.0f)) * (0.5f))");
  EXPECT_EQ(s.c(-s.a), "(-a)");
}

TEST(ExprEmitter, SixteenBitResultsAreRounded) {
  const Scope s;
  EXPECT_EQ(s.c(s.h + s.g), "round_bf16((h + g))");
  EXPECT_EQ(s.c(s.h * s.g - s.h), "round_bf16((round_bf16((h * g)) - h))");
  EXPECT_EQ(s.c(s.p / s.p), "round_f16((p / p))");
  EXPECT_EQ(s.c(te::exp(s.h)), "round_bf16(expf(h))");
  EXPECT_EQ(s.c(te::pow(s.p, 2)), "round_f16(powi_f32(p, 2))");
  EXPECT_EQ(s.c(te::max(s.h, s.g)), "round_bf16(fmaxf(h, g))");
  // Negation is exact in every float dtype.
  EXPECT_EQ(s.c(-s.h), "(-h)");
  // A bf16 constant is already rounded to bf16 when built: 0.1 becomes 0.10009765625.
  EXPECT_EQ(s.c(s.h * 0.1), "round_bf16((h * (0.100097656f)))");
}

TEST(ExprEmitter, PackedRoundingNamesThePackedHelpers) {
  Scope s;
  s.bindings.packed_rounding = true;
  EXPECT_EQ(s.c(s.h * s.g - s.h), "round_bf16_packed((round_bf16_packed((h * g)) - h))");
  EXPECT_EQ(s.c(te::exp(s.h)), "round_bf16_packed(expf(h))");
  EXPECT_EQ(s.c(s.p / s.p), "round_f16_packed((p / p))");
  EXPECT_EQ(s.c(te::cast(DType::bf16, s.a)), "round_bf16_packed(a)");
  // f32 results are not rounded either way.
  EXPECT_EQ(s.c(s.a * s.b), "(a * b)");
}

TEST(ExprEmitter, Casts) {
  const Scope s;
  EXPECT_EQ(s.c(te::cast(DType::f32, s.h)), "h");  // widening is exact: the value is already a float
  EXPECT_EQ(s.c(te::cast(DType::bf16, s.a)), "round_bf16(a)");
  EXPECT_EQ(s.c(te::cast(DType::f16, s.h)), "round_f16(h)");
  EXPECT_EQ(s.c(te::cast(DType::bf16, s.h)), "h");
  EXPECT_EQ(s.c(te::cast(DType::f32, s.i)), "((float)i)");
  EXPECT_EQ(s.c(te::cast(DType::bf16, s.i)), "round_bf16(((float)i))");
  EXPECT_EQ(s.c(te::cast(DType::i32, s.a)), "((int)a)");
  EXPECT_EQ(s.c(te::cast(DType::i32, s.i)), "((int)i)");
}

TEST(ExprEmitter, CompareAndSelect) {
  const Scope s;
  EXPECT_EQ(s.c(s.a < s.b), "(a < b)");
  EXPECT_EQ(s.c(s.a <= s.b), "(a <= b)");
  EXPECT_EQ(s.c(s.a > s.b), "(a > b)");
  EXPECT_EQ(s.c(s.a >= s.b), "(a >= b)");
  EXPECT_EQ(s.c(s.a == s.b), "(a == b)");
  EXPECT_EQ(s.c(s.a != s.b), "(a != b)");
  EXPECT_EQ(s.c(te::select(s.j <= s.i + 3, s.a,
                           te::constant(DType::f32, -std::numeric_limits<double>::infinity()))),
            "((j <= (i + (3))) ? a : __int_as_float(0xff800000))");
  EXPECT_EQ(s.c(te::select(s.h > s.g, s.h, s.g)), "((h > g) ? h : g)");
}

TEST(ExprEmitter, MinMaxFloatAndInteger) {
  const Scope s;
  EXPECT_EQ(s.c(te::min(s.a, s.b)), "fminf(a, b)");
  EXPECT_EQ(s.c(te::max(s.a, s.b)), "fmaxf(a, b)");
  EXPECT_EQ(s.c(te::min(s.i, s.j)), "min(i, j)");
  EXPECT_EQ(s.c(te::max(s.i, s.j + 1)), "max(i, (j + (1)))");
  EXPECT_EQ(s.c(s.i * 2 - s.j / 3), "((i * (2)) - (j / (3)))");
}

TEST(ExprEmitter, UnaryFunctions) {
  const Scope s;
  EXPECT_EQ(s.c(te::exp(s.a)), "expf(a)");
  EXPECT_EQ(s.c(te::log(s.a)), "logf(a)");
  EXPECT_EQ(s.c(te::tanh(s.a)), "tanhf(a)");
  EXPECT_EQ(s.c(te::erf(s.a)), "erff(a)");
  EXPECT_EQ(s.c(te::sqrt(s.a)), "sqrtf(a)");
  EXPECT_EQ(s.c(te::rsqrt(s.a)), "rsqrtf(a)");
  EXPECT_EQ(s.c(te::sigmoid(s.a)), "sigmoid_f32(a)");
  EXPECT_EQ(s.c(te::abs(s.a)), "fabsf(a)");
  EXPECT_EQ(s.c(te::abs(s.i)), "abs(i)");
  EXPECT_EQ(s.c(-s.i), "(-i)");
}

TEST(ExprEmitter, ApproximateMathOnlyWhereAsked) {
  Scope s;
  s.bindings.approximate_math = true;
  EXPECT_EQ(s.c(te::exp(s.a)), "exp2_approx(a * (1.44269502f))");
  EXPECT_EQ(s.c(te::exp(s.h)), "round_bf16(exp2_approx(h * (1.44269502f)))");
  // exp(a - b) in f32: one FFMA before ex2, b's product with log2 e computed where b is.
  EXPECT_EQ(s.c(te::exp(s.a - s.b)), "exp2_approx(fmaf(a, (1.44269502f), -(b) * (1.44269502f)))");
  EXPECT_EQ(s.c(te::tanh(s.a)), "tanh_approx(a)");
  EXPECT_EQ(s.c(te::tanh(s.h)), "round_bf16(tanh_approx(h))");
  EXPECT_EQ(s.c(te::log(s.a)), "logf(a)");  // only exp and tanh have approximate forms
  EXPECT_EQ(s.c(te::sigmoid(s.a)), "sigmoid_f32(a)");
}

TEST(ExprEmitter, ReciprocalDivisionOnlyByF32Constants) {
  Scope s;
  EXPECT_EQ(s.c(s.a / 30.0), "(a / (30.0f))");
  s.bindings.reciprocal_division = true;
  EXPECT_EQ(s.c(s.a / 30.0), "(a * (0.0333333351f))");  // 1/30 rounded to f32
  EXPECT_EQ(s.c(s.a / 4.0), "(a * (0.25f))");
  EXPECT_EQ(s.c(s.a / s.b), "(a / b)");       // not a constant
  EXPECT_EQ(s.c(1.0 / s.a), "((1.0f) / a)");  // a constant dividend
  EXPECT_EQ(s.c(s.i / 3), "(i / (3))");       // integer division
}

TEST(ExprEmitter, DivisionsTheCallerChoosesMultiplyByTheReciprocal) {
  Scope s;
  s.bindings.multiply_by_reciprocal = [&](const Expr& e) {
    return e.as<te::BinaryNode>()->b.same_as(s.b);  // divisions by b
  };
  EXPECT_EQ(s.c(s.a / s.b), "(a * (1.0f / b))");
  EXPECT_EQ(s.c(s.b / s.a), "(b / a)");
  s.bindings.reciprocal_division = true;  // a constant divisor keeps its own form
  EXPECT_EQ(s.c(s.a / 4.0), "(a * (0.25f))");
}

TEST(ExprEmitter, ScaledViewsOfPositiveConstants) {
  Scope s;
  const Expr eighth = te::constant(DType::f32, 0.125);
  const Expr neg_inf = te::constant(DType::f32, -std::numeric_limits<double>::infinity());
  // c·x and x·c, and a select with ±inf or 0 on the other side, keep x and take c once.
  const auto scaled = [&](const Expr& e) { return emit_scaled(e, s.bindings); };
  ASSERT_TRUE(scaled(s.a * eighth).has_value());
  EXPECT_EQ(scaled(s.a * eighth)->base, "a");
  EXPECT_EQ(scaled(s.a * eighth)->factor, 0.125);
  EXPECT_EQ(scaled(eighth * s.a)->base, "a");
  const auto masked = scaled(te::select(s.j <= s.i, s.a * eighth, neg_inf));
  ASSERT_TRUE(masked.has_value());
  EXPECT_EQ(masked->base, "((j <= i) ? a : __int_as_float(0xff800000))");
  EXPECT_EQ(masked->factor, 0.125);
  EXPECT_EQ(scaled(te::select(s.j <= s.i, te::constant(DType::f32, 0.0), s.a * eighth))->base,
            "((j <= i) ? (0.0f) : a)");
  // Not scaled views: a negative or infinite factor, a sum, a select with another value, a 16-bit value.
  EXPECT_FALSE(scaled(s.a * te::constant(DType::f32, -0.125)).has_value());
  EXPECT_FALSE(scaled(s.a * te::constant(DType::f32, std::numeric_limits<double>::infinity())).has_value());
  EXPECT_FALSE(scaled(s.a * s.b).has_value());
  EXPECT_FALSE(scaled(s.a + eighth).has_value());
  EXPECT_FALSE(scaled(te::select(s.j <= s.i, s.a * eighth, te::constant(DType::f32, 1.0))).has_value());
  EXPECT_FALSE(scaled(s.h * te::constant(DType::bf16, 0.125)).has_value());
  EXPECT_FALSE(scaled(s.b).has_value());
  // A read bound as a scaled view is one; an approximate exp of it minus b takes the factor in its FFMA.
  s.bindings.scaled_reads[s.tb.get()] = ScaledValue{"b0", 0.5};
  EXPECT_EQ(scaled(s.b)->base, "b0");
  s.bindings.approximate_math = true;
  EXPECT_EQ(s.c(te::exp(s.b - s.a)), "exp2_approx(fmaf(b0, (0.721347511f), -(a) * (1.44269502f)))");
  EXPECT_EQ(s.c(te::exp(s.a - s.b)), "exp2_approx(fmaf(a, (1.44269502f), -(b) * (1.44269502f)))");
}

TEST(ExprEmitter, Powers) {
  const Scope s;
  EXPECT_EQ(s.c(te::pow(s.a, 3)), "powi_f32(a, 3)");
  EXPECT_EQ(s.c(te::pow(s.a, -2)), "powi_f32(a, -2)");
  EXPECT_EQ(s.c(te::pow(s.a, 0)), "powi_f32(a, 0)");
  EXPECT_EQ(s.c(te::pow(s.i, 3)), "(1 * i * i * i)");
  EXPECT_EQ(s.c(te::pow(s.i, 0)), "(1)");
}

TEST(ExprEmitter, Constants) {
  const Scope s;
  EXPECT_EQ(s.c(Expr(7)), "(7)");
  EXPECT_EQ(s.c(te::constant(DType::i32, -3)), "(-3)");
  EXPECT_EQ(s.c(Expr(2.0)), "(2.0f)");
  EXPECT_EQ(s.c(te::constant(DType::f16, 0.1)), "(0.0999755859f)");
}

TEST(ExprEmitter, BoundReductions) {
  const Tensor x = te::placeholder({4, 8}, DType::f32, "x");
  const Var c = te::reduce_axis(8, "c");
  Expr reduction, body;
  te::compute(
      {4},
      [&](Var r) {
        reduction = te::sum(x(r, c), {c});
        body = reduction / 8.0;
        return body;
      },
      "mean");
  ExprBindings bindings;
  bindings.reductions[reduction.as<te::ReduceNode>()] = "red0_0[h]";
  EXPECT_EQ(emit_expr(body, bindings), "(red0_0[h] / (8.0f))");
}

TEST(ExprEmitter, UnboundNamesAreInternalErrors) {
  const Scope s;
  const ExprBindings none;
  EXPECT_THROW(emit_expr(s.a + s.b, none), InternalError);
  EXPECT_THROW(emit_expr(s.i + 1, none), InternalError);
  const Tensor x = te::placeholder({4, 8}, DType::f32, "x");
  const Var c = te::reduce_axis(8, "c");
  Expr reduction;
  te::compute(
      {4}, [&](Var r) { return reduction = te::sum(x(r, c), {c}); }, "total");
  ExprBindings reads_only;
  reads_only.reads[x.get()] = "x";
  EXPECT_THROW(emit_expr(reduction, reads_only), InternalError);
}

TEST(FloatLiteral, SpecialAndTypicalValues) {
  EXPECT_EQ(float_literal(0.1), "(0.100000001f)");
  EXPECT_EQ(float_literal(1e-5), "(9.99999975e-06f)");
  EXPECT_EQ(float_literal(1e30), "(1.00000002e+30f)");
  EXPECT_EQ(float_literal(1e10), "(1e+10f)");
  EXPECT_EQ(float_literal(2.0), "(2.0f)");
  EXPECT_EQ(float_literal(-0.5), "(-0.5f)");
  EXPECT_EQ(float_literal(0.0), "(0.0f)");
  EXPECT_EQ(float_literal(-0.0), "(-0.0f)");
  EXPECT_EQ(float_literal(16777217.0), "(16777216.0f)");  // rounded to f32 first
  EXPECT_EQ(float_literal(std::numeric_limits<double>::infinity()), "__int_as_float(0x7f800000)");
  EXPECT_EQ(float_literal(-std::numeric_limits<double>::infinity()), "__int_as_float(0xff800000)");
  EXPECT_EQ(float_literal(std::numeric_limits<double>::quiet_NaN()), "__int_as_float(0x7fffffff)");
  EXPECT_EQ(float_literal(1e39), "__int_as_float(0x7f800000)");  // beyond f32: infinity, as the cast gives
}

// "(<text>f)" -> the float the C compiler reads from <text>.
float read_back(const std::string& literal) {
  EXPECT_EQ(literal.front(), '(');
  EXPECT_EQ(literal.substr(literal.size() - 2), "f)");
  return std::strtof(literal.substr(1, literal.size() - 3).c_str(), nullptr);
}

TEST(FloatLiteral, ReadsBackExactly) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<std::uint32_t> bits;
  int checked = 0;
  while (checked < 20000) {
    const std::uint32_t word = bits(rng);
    float f;
    std::memcpy(&f, &word, sizeof f);
    if (!std::isfinite(f)) continue;
    const float back = read_back(float_literal(f));
    std::uint32_t back_word;
    std::memcpy(&back_word, &back, sizeof back);
    ASSERT_EQ(back_word, word) << float_literal(f);
    ++checked;
  }
  for (float f : {std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 3.14159265f}) {
    EXPECT_EQ(read_back(float_literal(f)), f) << float_literal(f);
  }
}

}  // namespace
}  // namespace comfuse::codegen
