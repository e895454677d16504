// Random valid tensor-expression programs, reproducible from a seed, for round-trip, interpreter and fuzz
// tests.
//
// Header-only so that any test executable can include it. Programs are built with the public DSL builders
// only, so every generated program is valid by construction; if a builder rejects one, that is a bug in
// either the generator or the validation, and the CompileError surfaces in the calling test.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "te/program.h"
#include "te/tensor.h"

namespace comfuse::te {

/// What random_program generates.
struct RandomProgramOptions {
  /// Levels of random operators in a compute body, leaves included (1: a leaf only). Read indices and the
  /// wrappers that `bounded` adds do not count towards it.
  int max_depth = 4;
  /// false: any valid program. Constants include inf, -inf, nan, -0.0 and the i32 extremes; evaluated values
  /// may overflow, divide by zero (i32 too) or become NaN. For structural tests (JSON, equality, printing):
  /// do not evaluate such a program with native integer arithmetic.
  /// true: with placeholder data in [-1, 1] (float dtypes) and integers in [-8, 8] (i32), every element of
  /// every tensor stays in those ranges, whatever the intermediate precision (the bounds hold in exact
  /// arithmetic and rounding to nearest keeps them), so evaluation is finite, free of NaN and of undefined
  /// behaviour. The generator scales float sums and sums of two values, clamps i32 arithmetic,
  /// keeps divisors at least 1 in magnitude, the arguments of log/sqrt/rsqrt non-negative and exponents
  /// non-negative, and converts between float and i32 with a factor of 8.
  bool bounded = false;
};

namespace random_program_detail {

// SplitMix64: tiny, and the same sequence on every platform (<random>'s distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n), n > 0.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  /// Uniform in [lo, hi].
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }
  bool percent(int p) { return below(100) < p; }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(below(static_cast<int>(items.size())))];
  }

 private:
  std::uint64_t state_;
};

class Generator {
 public:
  Generator(std::uint64_t seed, const RandomProgramOptions& options) : rng_(seed), options_(options) {}

  Program build() {
    std::vector<Tensor> inputs;
    const int placeholders = rng_.between(1, 3);
    for (int p = 0; p < placeholders; ++p) {
      std::vector<std::int64_t> shape = random_shape();  // separate statements: argument order is unspecified
      const DType dtype = random_dtype();
      inputs.push_back(placeholder(std::move(shape), dtype, "X" + std::to_string(p)));
      available_.push_back(inputs.back());
    }
    std::vector<Tensor> computes;
    const int count = rng_.between(1, 4);
    for (int c = 0; c < count; ++c) {
      const DType dtype = random_dtype();
      computes.push_back(compute(
          random_shape(),
          [&](const std::vector<Var>& axes) {
            axes_ = axes;
            return gen(dtype, options_.max_depth, /*in_reduce=*/false);
          },
          "Y" + std::to_string(c)));
      available_.push_back(computes.back());
    }
    std::vector<Tensor> outputs = {computes.back()};
    if (count > 1 && rng_.percent(50))
      outputs.push_back(computes[static_cast<std::size_t>(rng_.below(count - 1))]);
    return Program(inputs, outputs);
  }

 private:
  std::vector<std::int64_t> random_shape() {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(rng_.between(1, 3)));
    for (auto& extent : shape) extent = rng_.between(1, 7);
    return shape;
  }

  DType random_dtype() {
    return rng_.pick(std::vector<DType>{DType::f32, DType::f16, DType::bf16, DType::i32});
  }

  // An expression of `dtype` with at most `depth` levels of random operators.
  Expr gen(DType dtype, int depth, bool in_reduce) {
    if (depth <= 1) return leaf(dtype);
    switch (rng_.below(8)) {
      case 0:
        return leaf(dtype);
      case 1:
      case 2:
        return arithmetic(dtype, depth, in_reduce);
      case 3: {
        const DType operand = random_dtype();
        const auto op = static_cast<CompareOp>(rng_.below(6));
        Expr lhs = gen(operand, depth - 1, in_reduce);
        Expr cond = compare(op, std::move(lhs), gen(operand, depth - 1, in_reduce));
        Expr if_true = gen(dtype, depth - 1, in_reduce);
        return select(std::move(cond), std::move(if_true), gen(dtype, depth - 1, in_reduce));
      }
      case 4: {
        const DType from = random_dtype();
        return convert(gen(from, depth - 1, in_reduce), dtype, /*explicit_cast=*/true);
      }
      case 5:
        return math(dtype, depth, in_reduce);
      case 6:
        return power(dtype, depth, in_reduce);
      case 7:
        return in_reduce ? leaf(dtype) : reduction(dtype, depth);
    }
    return leaf(dtype);
  }

  Expr arithmetic(DType dtype, int depth, bool in_reduce) {
    const auto op = static_cast<BinaryOp>(rng_.below(6));
    Expr a = gen(dtype, depth - 1, in_reduce);
    Expr b = gen(dtype, depth - 1, in_reduce);
    if (!options_.bounded) return binary(op, std::move(a), std::move(b));
    const bool integer = dtype == DType::i32;
    switch (op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
        return integer ? clamp(binary(op, std::move(a), std::move(b)))
                       : binary(op, std::move(a), std::move(b)) * 0.5;
      case BinaryOp::kMul:
        return integer ? clamp(std::move(a) * std::move(b)) : std::move(a) * std::move(b);
      case BinaryOp::kDiv:
        return integer ? std::move(a) / max(abs(std::move(b)), constant(DType::i32, 1))
                       : std::move(a) / (abs(std::move(b)) + 1);
      case BinaryOp::kMin:
      case BinaryOp::kMax:
        return binary(op, std::move(a), std::move(b));
    }
    return binary(op, std::move(a), std::move(b));
  }

  Expr math(DType dtype, int depth, bool in_reduce) {
    Expr x = gen(dtype, depth - 1, in_reduce);
    if (dtype == DType::i32) return unary(rng_.percent(50) ? UnaryOp::kNeg : UnaryOp::kAbs, std::move(x));
    const auto op = static_cast<UnaryOp>(rng_.below(9));
    if (!options_.bounded) return unary(op, std::move(x));
    switch (op) {
      case UnaryOp::kExp:
        return exp(std::move(x)) * 0.25;
      case UnaryOp::kLog:
      case UnaryOp::kRsqrt:
        return unary(op, abs(std::move(x)) + 1);
      case UnaryOp::kSqrt:
        return sqrt(abs(std::move(x)));
      case UnaryOp::kNeg:
      case UnaryOp::kAbs:
      case UnaryOp::kTanh:
      case UnaryOp::kErf:
      case UnaryOp::kSigmoid:
        return unary(op, std::move(x));
    }
    return unary(op, std::move(x));
  }

  Expr power(DType dtype, int depth, bool in_reduce) {
    Expr base = gen(dtype, depth - 1, in_reduce);
    const bool integer = dtype == DType::i32;
    if (options_.bounded)
      return integer ? clamp(pow(std::move(base), rng_.between(0, 2)))
                     : pow(std::move(base), rng_.between(0, 4));
    return pow(std::move(base), integer ? rng_.between(0, 5) : rng_.between(-3, 5));
  }

  Expr reduction(DType dtype, int depth) {
    std::vector<Var> axes;
    std::int64_t count = 1;
    const int n = rng_.between(1, 2);
    for (int a = 0; a < n; ++a) {
      const int extent = rng_.between(1, 7);
      axes.push_back(reduce_axis(extent, rng_.pick(std::vector<std::string>{"k", "k", "r", "k_1"})));
      count *= axes.back().extent();
      reduce_scope_.push_back(axes.back());
    }
    Expr body = gen(dtype, depth - 1, /*in_reduce=*/true);
    reduce_scope_.resize(reduce_scope_.size() - axes.size());
    const auto op = static_cast<ReduceOp>(rng_.below(3));
    Expr result = reduce(op, std::move(body), std::move(axes));
    if (!options_.bounded || op != ReduceOp::kSum) return result;
    if (dtype == DType::i32) return clamp(std::move(result));
    double scale = 1;
    while (scale * static_cast<double>(count) > 1) scale /= 2;  // a power of two: exact in every float dtype
    return std::move(result) * scale;
  }

  Expr leaf(DType dtype) {
    switch (rng_.below(3)) {
      case 0:
        return constant(dtype, random_constant(dtype));
      case 1: {
        std::vector<Var> vars = axes_;
        vars.insert(vars.end(), reduce_scope_.begin(), reduce_scope_.end());
        return convert(rng_.pick(vars), dtype, /*explicit_cast=*/false);
      }
      case 2: {
        const Tensor& t = rng_.pick(available_);
        std::vector<Expr> indices;
        for (std::int64_t extent : t.shape()) indices.push_back(random_index(extent));
        return convert(t.read(std::move(indices)), dtype, /*explicit_cast=*/false);
      }
    }
    return constant(dtype, 0);
  }

  double random_constant(DType dtype) {
    if (options_.bounded) {
      return dtype == DType::i32 ? rng_.between(-8, 8) : rng_.between(-1000, 1000) / 1000.0;
    }
    if (dtype == DType::i32) {
      return rng_.pick(std::vector<double>{0, 1, -1, 7, -100, 2147483647.0, -2147483648.0,
                                           static_cast<double>(rng_.between(-1000, 1000))});
    }
    const double inf = std::numeric_limits<double>::infinity();
    return rng_.pick(std::vector<double>{0.1, -2.5, 0.0, -0.0, 1e-8, 65504.0, 1e30, 3.4028234663852886e38,
                                         inf, -inf, std::numeric_limits<double>::quiet_NaN(), 1.0 / 3.0,
                                         (rng_.unit() - 0.5) * 2e6, rng_.unit()});
  }

  // An index into an axis of `extent` that the validator accepts and that stays in range when evaluated:
  // a constant, or an in-scope variable shifted, reversed, doubled or clamped to fit.
  Expr random_index(std::int64_t extent) {
    const auto e = static_cast<int>(extent);
    std::vector<std::function<Expr()>> choices = {[&] { return constant(DType::i32, rng_.below(e)); }};
    std::vector<Var> vars = axes_;
    vars.insert(vars.end(), reduce_scope_.begin(), reduce_scope_.end());
    for (const Var& v : vars) {
      const auto x = static_cast<int>(v.extent());
      choices.push_back([&, v] { return min(v, constant(DType::i32, e - 1)); });
      if (x <= e) {
        choices.push_back([&, v, x] { return v + rng_.between(0, e - x); });
        choices.push_back([&, v] { return (e - 1) - Expr(v); });
      }
      if (2 * (x - 1) <= e - 1) choices.push_back([&, v] { return Expr(v) * 2; });
    }
    return rng_.pick(choices)();
  }

  // `e` as `to`. In bounded mode, i32 values in [-8, 8] map to floats in [-1, 1] and back by a factor of 8.
  Expr convert(Expr e, DType to, bool explicit_cast) {
    const DType from = e.dtype();
    if (from == to && !explicit_cast) return e;
    if (!options_.bounded || (from == DType::i32) == (to == DType::i32)) return cast(to, std::move(e));
    if (to == DType::i32) return cast(DType::i32, std::move(e) * 8);
    return cast(to, std::move(e)) * 0.125;
  }

  static Expr clamp(Expr x) {
    return max(min(std::move(x), constant(DType::i32, 8)), constant(DType::i32, -8));
  }

  Rng rng_;
  RandomProgramOptions options_;
  std::vector<Tensor> available_;  // tensors a new compute may read: placeholders, then earlier computes
  std::vector<Var> axes_;          // the axes of the compute being generated
  std::vector<Var> reduce_scope_;  // reduce axes bound around the expression being generated
};

}  // namespace random_program_detail

/// A random valid program, reproducible from `seed` on every platform: 1–3 placeholders named X0.. (dtypes
/// f32, f16, bf16, i32; rank 1–3; extents 1–7), all of them inputs (some possibly unread); 1–4 computes
/// named Y0.. of random dtype and shape, whose bodies are random trees over every node kind: constants,
/// axes, arithmetic, comparisons in selects, casts, math, integer powers, reads of earlier tensors with
/// in-range indices (constants and shifted, reversed, doubled or clamped axes; lower-rank tensors give
/// broadcasts), and reductions over fresh reduce axes (often with the same names) that are never nested.
/// Outputs: the last compute, and sometimes one earlier one; computes no output reads are dropped by
/// Program. A few dozen seeds exercise every node kind and every op.
inline Program random_program(std::uint64_t seed, const RandomProgramOptions& options = {}) {
  return random_program_detail::Generator(seed, options).build();
}

}  // namespace comfuse::te
