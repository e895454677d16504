// The printer's exact text for every node kind, tensors and programs, and shortest round-trip doubles.
#include "te/printer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include "te/program.h"

namespace comfuse::te {
namespace {

class PrinterTest : public ::testing::Test {
 protected:
  Tensor x = placeholder({4, 8}, DType::f32, "X");
  Var i = Var(std::make_shared<VarNode>("i0", 4, VarKind::kAxis));
  Var j = Var(std::make_shared<VarNode>("i1", 8, VarKind::kAxis));
  Expr v = x(i, j);
};

TEST_F(PrinterTest, Constants) {
  EXPECT_EQ(to_string(Expr(3)), "3");
  EXPECT_EQ(to_string(Expr(-7)), "-7");
  EXPECT_EQ(to_string(Expr(0.5)), "0.5");
  EXPECT_EQ(to_string(Expr(2.0)), "2.0");
  EXPECT_EQ(to_string(Expr(0.1)), "0.10000000149011612");  // the f32 value, printed exactly
  EXPECT_EQ(to_string(constant(DType::bf16, 0.1)), "bf16(0.10009765625)");
  EXPECT_EQ(to_string(constant(DType::f16, 1e6)), "f16(inf)");
}

TEST_F(PrinterTest, VariablesAndReads) {
  EXPECT_EQ(to_string(i), "i0");
  EXPECT_EQ(to_string(v), "X[i0, i1]");
  EXPECT_EQ(to_string(x(i + 1, 0)), "X[(i0 + 1), 0]");
  EXPECT_EQ(to_string(x(min(i + 1, 3), j * 2 - 1)), "X[min((i0 + 1), 3), ((i1 * 2) - 1)]");
}

TEST_F(PrinterTest, Arithmetic) {
  EXPECT_EQ(to_string(v + 1.0), "(X[i0, i1] + 1.0)");
  EXPECT_EQ(to_string(v - 1.0), "(X[i0, i1] - 1.0)");
  EXPECT_EQ(to_string(2.0 * v), "(2.0 * X[i0, i1])");
  EXPECT_EQ(to_string(v / v), "(X[i0, i1] / X[i0, i1])");
  EXPECT_EQ(to_string(min(v, 0.0)), "min(X[i0, i1], 0.0)");
  EXPECT_EQ(to_string(max(v, 0.0)), "max(X[i0, i1], 0.0)");
  EXPECT_EQ(to_string((v + 1.0) * (v - 1.0)), "((X[i0, i1] + 1.0) * (X[i0, i1] - 1.0))");
}

TEST_F(PrinterTest, Comparisons) {
  EXPECT_EQ(to_string(v < 0.0), "(X[i0, i1] < 0.0)");
  EXPECT_EQ(to_string(v <= 0.0), "(X[i0, i1] <= 0.0)");
  EXPECT_EQ(to_string(v > 0.0), "(X[i0, i1] > 0.0)");
  EXPECT_EQ(to_string(v >= 0.0), "(X[i0, i1] >= 0.0)");
  EXPECT_EQ(to_string(i == j), "(i0 == i1)");
  EXPECT_EQ(to_string(i != 0), "(i0 != 0)");
}

TEST_F(PrinterTest, SelectAndCast) {
  EXPECT_EQ(to_string(select(v > 0.0, v, 0.0)), "select((X[i0, i1] > 0.0), X[i0, i1], 0.0)");
  EXPECT_EQ(to_string(cast(DType::bf16, v)), "bf16(X[i0, i1])");
  EXPECT_EQ(to_string(cast(DType::f32, i)), "f32(i0)");
  EXPECT_EQ(to_string(cast(DType::i32, v)), "i32(X[i0, i1])");
}

TEST_F(PrinterTest, UnaryMath) {
  EXPECT_EQ(to_string(-v), "-X[i0, i1]");
  EXPECT_EQ(to_string(-(v + 1.0)), "-(X[i0, i1] + 1.0)");
  EXPECT_EQ(to_string(abs(v)), "abs(X[i0, i1])");
  EXPECT_EQ(to_string(exp(v)), "exp(X[i0, i1])");
  EXPECT_EQ(to_string(log(v)), "log(X[i0, i1])");
  EXPECT_EQ(to_string(tanh(v)), "tanh(X[i0, i1])");
  EXPECT_EQ(to_string(erf(v)), "erf(X[i0, i1])");
  EXPECT_EQ(to_string(sqrt(v)), "sqrt(X[i0, i1])");
  EXPECT_EQ(to_string(rsqrt(v)), "rsqrt(X[i0, i1])");
  EXPECT_EQ(to_string(sigmoid(v)), "sigmoid(X[i0, i1])");
}

TEST_F(PrinterTest, NegationOfANegativeConstantIsParenthesised) {
  EXPECT_EQ(to_string(-Expr(-1)), "-(-1)");
  EXPECT_EQ(to_string(-Expr(-0.5)), "-(-0.5)");
  EXPECT_EQ(to_string(-(-v)), "-(-X[i0, i1])");
}

TEST_F(PrinterTest, Pow) {
  EXPECT_EQ(to_string(pow(v, 3)), "pow(X[i0, i1], 3)");
  EXPECT_EQ(to_string(pow(v, -2)), "pow(X[i0, i1], -2)");
}

TEST_F(PrinterTest, Reductions) {
  Tensor y = placeholder({4, 8, 2}, DType::f32, "Y");
  Var k = reduce_axis(8, "k"), l = reduce_axis(2, "l");
  EXPECT_EQ(to_string(sum(x(i, k), {k})), "sum[k<8](X[i0, k])");
  EXPECT_EQ(to_string(max_reduce(y(i, k, l), {k, l})), "max[k<8, l<2](Y[i0, k, l])");
  EXPECT_EQ(to_string(min_reduce(x(i, k) * 2.0, {k})), "min[k<8]((X[i0, k] * 2.0))");
}

TEST_F(PrinterTest, UndefinedExpression) {
  EXPECT_EQ(to_string(Expr()), "<undefined>");
}

TEST_F(PrinterTest, Tensors) {
  EXPECT_EQ(to_string(x), "X: f32[4, 8] input");
  EXPECT_EQ(to_string(placeholder({3}, DType::bf16, "b")), "b: bf16[3] input");
  Tensor y = compute(
      {4, 8}, [&](Var a, Var b) { return cast(DType::bf16, x(a, b) * 0.5); }, "Y");
  EXPECT_EQ(to_string(y), "Y: bf16[4, 8] = compute(i0, i1) bf16((X[i0, i1] * 0.5))");
}

TEST(ProgramPrinter, WholeProgram) {
  Tensor x = placeholder({4, 8}, DType::bf16, "X");
  Tensor w = placeholder({8, 3}, DType::bf16, "W");
  Tensor bias = placeholder({3}, DType::f32, "bias");
  Tensor unused = placeholder({2}, DType::f16, "U");
  Var k = reduce_axis(8, "k");
  Tensor y = compute(
      {4, 3}, [&](Var i, Var j) { return sum(cast(DType::f32, x(i, k)) * cast(DType::f32, w(k, j)), {k}); },
      "Y");
  Tensor z = compute(
      {4, 3}, [&](Var i, Var j) { return max(y(i, j) + bias(j), 0.0); }, "Z");
  Program p({x, w, bias, unused}, {z, y});
  EXPECT_EQ(to_string(p),
            "U: f16[2] input\n"
            "X: bf16[4, 8] input\n"
            "W: bf16[8, 3] input\n"
            "Y: f32[4, 3] = compute(i0, i1) sum[k<8]((f32(X[i0, k]) * f32(W[k, i1])))\n"
            "bias: f32[3] input\n"
            "Z: f32[4, 3] = compute(i0, i1) max((Y[i0, i1] + bias[i1]), 0.0)\n"
            "outputs: Z Y\n");
}

TEST(FormatDouble, ShortestText) {
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1e-05), "1e-05");
  EXPECT_EQ(format_double(1e+20), "1e+20");
  EXPECT_EQ(format_double(1e5), "1e+05");
  EXPECT_EQ(format_double(10000.0), "10000.0");  // as short as 1e+04: the fixed form wins the tie
  EXPECT_EQ(format_double(100.0), "100.0");
  EXPECT_EQ(format_double(-2.5), "-2.5");
  EXPECT_EQ(format_double(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(format_double(123456789012.0), "123456789012.0");
  EXPECT_EQ(format_double(5e-324), "5e-324");
  EXPECT_EQ(format_double(1.7976931348623157e308), "1.7976931348623157e+308");
}

TEST(FormatDouble, SpecialValues) {
  EXPECT_EQ(format_double(0.0), "0.0");
  EXPECT_EQ(format_double(-0.0), "-0.0");
  EXPECT_EQ(format_double(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_double(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format_double(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(format_double(-std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(FormatDouble, ReadsBackAsTheSameDouble) {
  for (double value : {0.1, 1e-05, 1e+20, -0.0, 0.10009765625, 3.4028234663852886e38, 2.2250738585072014e-308,
                       4.9406564584124654e-324, 1.0 / 3.0, -123.456, 6.02214076e23}) {
    const std::string text = format_double(value);
    const double back = std::strtod(text.c_str(), nullptr);
    EXPECT_EQ(back, value) << text;
    EXPECT_EQ(std::signbit(back), std::signbit(value)) << text;
  }
}

}  // namespace
}  // namespace comfuse::te
