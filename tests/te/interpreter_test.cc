// The reference interpreter against naive double-precision loops written here, on random data with odd
// shapes.
#include "te/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "te/contraction.h"

namespace comfuse::te {
namespace {

using Accumulation = ReferenceOptions::Accumulation;

constexpr std::int64_t M = 37, K = 29, N = 53;

std::vector<double> values(const HostBuffer& b) {
  std::vector<double> v(static_cast<std::size_t>(b.numel()));
  for (std::int64_t e = 0; e < b.numel(); ++e) v[static_cast<std::size_t>(e)] = b.get(e);
  return v;
}

double rel_error(const HostBuffer& out, const std::vector<double>& ref) {
  EXPECT_EQ(static_cast<std::size_t>(out.numel()), ref.size());
  double diff = 0, norm = 0;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const double o = out.get(static_cast<std::int64_t>(e));
    diff += (o - ref[e]) * (o - ref[e]);
    norm += ref[e] * ref[e];
  }
  return std::sqrt(diff / norm);
}

Expr f32(Expr e) {
  return e.dtype() == DType::f32 ? e : cast(DType::f32, e);
}

// Evaluates in the three configurations that must all agree with a double-precision reference: fp32 with and
// without the Eigen contraction path (within `tol32`), and fp64 (within `tol64`: only f32 storage rounding).
void expect_matches(const Program& program, const std::vector<HostBuffer>& inputs,
                    const std::vector<std::vector<double>>& expected, double tol32, double tol64) {
  for (int config = 0; config < 3; ++config) {
    ReferenceOptions options;
    options.contractions_through_eigen = config != 1;
    options.accumulation = config == 2 ? Accumulation::kFp64 : Accumulation::kFp32;
    const std::vector<HostBuffer> out = evaluate(program, inputs, options);
    ASSERT_EQ(out.size(), expected.size());
    for (std::size_t o = 0; o < out.size(); ++o) {
      EXPECT_EQ(compare(out[o], out[o]).non_finite, 0) << "output " << o << " config " << config;
      EXPECT_LT(rel_error(out[o], expected[o]), config == 2 ? tol64 : tol32)
          << "output " << o << " config " << config;
    }
  }
}

// ---- GEMM family ----

struct Gemm {
  Tensor x, w, y;
};

Gemm gemm(DType dtype, bool w_col_major, std::int64_t m = M, std::int64_t k_extent = K, std::int64_t n = N) {
  Gemm g;
  g.x = placeholder({m, k_extent}, dtype, "X");
  g.w = w_col_major ? placeholder({n, k_extent}, dtype, "W") : placeholder({k_extent, n}, dtype, "W");
  auto k = reduce_axis(k_extent, "k");
  g.y = compute(
      {m, n},
      [&](Var i, Var j) { return sum(f32(g.x(i, k)) * f32(w_col_major ? g.w(j, k) : g.w(k, j)), {k}); }, "Y");
  return g;
}

std::vector<double> naive_gemm(const HostBuffer& x, const HostBuffer& w, bool w_col_major) {
  const std::int64_t m = x.shape()[0], kk = x.shape()[1], n = w_col_major ? w.shape()[0] : w.shape()[1];
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t k = 0; k < kk; ++k)
        acc += x.get(i * kk + k) * w.get(w_col_major ? j * kk + k : k * n + j);
      y[static_cast<std::size_t>(i * n + j)] = acc;
    }
  }
  return y;
}

TEST(Interpreter, GemmBothLayoutsAndDtypes) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (bool col_major : {false, true}) {
      Gemm g = gemm(dtype, col_major);
      const HostBuffer x = HostBuffer::random(dtype, g.x.shape(), 11);
      const HostBuffer w = HostBuffer::random(dtype, g.w.shape(), 12);
      expect_matches(Program({g.x, g.w}, {g.y}), {x, w}, {naive_gemm(x, w, col_major)}, 5e-7, 1e-7);
    }
  }
}

TEST(Interpreter, BatchedGemmAndAttention) {
  constexpr std::int64_t B = 3, Mq = 19, Nk = 41, D = 13, Dv = 11;
  auto q = placeholder({B, Mq, D}, DType::bf16, "Q");
  auto kt = placeholder({B, Nk, D}, DType::bf16, "K");
  auto v = placeholder({B, Nk, Dv}, DType::bf16, "V");
  auto d = reduce_axis(D, "d");
  auto s = compute(
      {B, Mq, Nk}, [&](Var b, Var i, Var j) { return sum(f32(q(b, i, d)) * f32(kt(b, j, d)), {d}); }, "S");
  const double scale = 0.3;
  auto c1 = reduce_axis(Nk, "c1");
  auto mx = compute(
      {B, Mq}, [&](Var b, Var i) { return max_reduce(s(b, i, c1), {c1}); }, "S_max");
  auto e = compute(
      {B, Mq, Nk}, [&](Var b, Var i, Var j) { return exp((s(b, i, j) - mx(b, i)) * scale); }, "E");
  auto c2 = reduce_axis(Nk, "c2");
  auto den = compute(
      {B, Mq}, [&](Var b, Var i) { return sum(e(b, i, c2), {c2}); }, "E_sum");
  auto p = compute(
      {B, Mq, Nk}, [&](Var b, Var i, Var j) { return e(b, i, j) / den(b, i); }, "P");
  auto c3 = reduce_axis(Nk, "c3");
  auto o = compute(
      {B, Mq, Dv}, [&](Var b, Var i, Var j) { return sum(p(b, i, c3) * f32(v(b, c3, j)), {c3}); }, "O");

  const HostBuffer hq = HostBuffer::random(DType::bf16, q.shape(), 21);
  const HostBuffer hk = HostBuffer::random(DType::bf16, kt.shape(), 22);
  const HostBuffer hv = HostBuffer::random(DType::bf16, v.shape(), 23);
  std::vector<double> ref_s(B * Mq * Nk), ref_o(B * Mq * Dv);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < Mq; ++i) {
      std::vector<double> row(Nk);
      double row_max = -INFINITY, total = 0;
      for (std::int64_t j = 0; j < Nk; ++j) {
        double acc = 0;
        for (std::int64_t k = 0; k < D; ++k)
          acc += hq.get((b * Mq + i) * D + k) * hk.get((b * Nk + j) * D + k);
        ref_s[(b * Mq + i) * Nk + j] = row[j] = acc;
        row_max = std::max(row_max, acc);
      }
      for (double& x : row) total += x = std::exp((x - row_max) * scale);
      for (std::int64_t j = 0; j < Dv; ++j) {
        double acc = 0;
        for (std::int64_t k = 0; k < Nk; ++k) acc += row[k] / total * hv.get((b * Nk + k) * Dv + j);
        ref_o[(b * Mq + i) * Dv + j] = acc;
      }
    }
  }
  expect_matches(Program({q, kt, v}, {s, o}), {hq, hk, hv}, {ref_s, ref_o}, 5e-7, 2e-7);
}

TEST(Interpreter, GemmBiasRelu) {
  Gemm g = gemm(DType::bf16, false);
  auto bias = placeholder({N}, DType::f32, "bias");
  auto y = compute(
      {M, N}, [&](Var i, Var j) { return max(g.y(i, j) + bias(j), 0.0); }, "Z");
  const HostBuffer x = HostBuffer::random(DType::bf16, g.x.shape(), 31);
  const HostBuffer w = HostBuffer::random(DType::bf16, g.w.shape(), 32);
  const HostBuffer b = HostBuffer::random(DType::f32, bias.shape(), 33);
  std::vector<double> ref = naive_gemm(x, w, false);
  int clamped = 0;
  for (std::int64_t e = 0; e < M * N; ++e) {
    ref[e] = std::max(ref[e] + b.get(e % N), 0.0);
    clamped += ref[e] == 0.0;
  }
  EXPECT_GT(clamped, M * N / 4);  // the ReLU is exercised
  expect_matches(Program({g.x, g.w, bias}, {y}), {x, w, b}, {ref}, 5e-7, 1e-7);
}

// ---- Normalisations, softmax and activations over an [M, N] input ----

struct RowProgram {
  Program program;
  std::vector<HostBuffer> inputs;
};

// Runs `build` on a random [M, N] f32 input X and compares with `naive` applied row by row.
void expect_row_op(const std::function<Tensor(const Tensor&)>& build,
                   const std::function<void(const double* x, double* y)>& naive, double tol32, double tol64,
                   double lo = -3, double hi = 3) {
  auto x = placeholder({M, N}, DType::f32, "X");
  Tensor y = build(x);
  const HostBuffer hx = HostBuffer::random(DType::f32, x.shape(), 41, lo, hi);
  const std::vector<double> vx = values(hx);
  std::vector<double> ref(vx.size());
  for (std::int64_t i = 0; i < M; ++i) naive(vx.data() + i * N, ref.data() + i * N);
  expect_matches(Program({x}, {y}), {hx}, {ref}, tol32, tol64);
}

TEST(Interpreter, LayerNormTwoPass) {
  const double eps = 1e-5;
  auto build = [&](const Tensor& x) {
    auto c1 = reduce_axis(N, "c1"), c2 = reduce_axis(N, "c2");
    auto mean = compute(
        {M}, [&](Var i) { return sum(x(i, c1), {c1}) / static_cast<double>(N); }, "mean");
    auto var = compute(
        {M}, [&](Var i) { return sum(pow(x(i, c2) - mean(i), 2), {c2}) / static_cast<double>(N); }, "var");
    return compute(
        {M, N}, [&](Var i, Var j) { return (x(i, j) - mean(i)) * rsqrt(var(i) + eps); }, "Y");
  };
  auto naive = [&](const double* x, double* y) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < N; ++j) mean += x[j] / N;
    for (std::int64_t j = 0; j < N; ++j) var += (x[j] - mean) * (x[j] - mean) / N;
    for (std::int64_t j = 0; j < N; ++j) y[j] = (x[j] - mean) / std::sqrt(var + eps);
  };
  // A large mean makes the two passes matter; rounding the stored mean to f32 limits the fp64 accuracy.
  expect_row_op(build, naive, 2e-6, 1e-6, /*lo=*/4, /*hi=*/6);
}

TEST(Interpreter, RmsNorm) {
  const double eps = 1e-6;
  auto build = [&](const Tensor& x) {
    auto c = reduce_axis(N, "c");
    auto ms = compute(
        {M}, [&](Var i) { return sum(x(i, c) * x(i, c), {c}) / static_cast<double>(N); }, "ms");
    return compute(
        {M, N}, [&](Var i, Var j) { return x(i, j) * rsqrt(ms(i) + eps); }, "Y");
  };
  auto naive = [&](const double* x, double* y) {
    double ms = 0;
    for (std::int64_t j = 0; j < N; ++j) ms += x[j] * x[j] / N;
    for (std::int64_t j = 0; j < N; ++j) y[j] = x[j] / std::sqrt(ms + eps);
  };
  expect_row_op(build, naive, 5e-7, 1e-7);
}

Tensor softmax(const Tensor& x, const std::string& name) {
  auto c1 = reduce_axis(x.shape()[1], name + "_c1"), c2 = reduce_axis(x.shape()[1], name + "_c2");
  auto mx = compute(
      {x.shape()[0]}, [&](Var i) { return max_reduce(x(i, c1), {c1}); }, name + "_max");
  auto e = compute(
      x.shape(), [&](Var i, Var j) { return exp(x(i, j) - mx(i)); }, name + "_exp");
  auto total = compute(
      {x.shape()[0]}, [&](Var i) { return sum(e(i, c2), {c2}); }, name + "_sum");
  return compute(
      x.shape(), [&](Var i, Var j) { return e(i, j) / total(i); }, name);
}

void naive_softmax(const double* x, double* y, std::int64_t n) {
  double mx = -INFINITY, total = 0;
  for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j]);
  for (std::int64_t j = 0; j < n; ++j) total += y[j] = std::exp(x[j] - mx);
  for (std::int64_t j = 0; j < n; ++j) y[j] /= total;
}

TEST(Interpreter, Softmax) {
  expect_row_op([](const Tensor& x) { return softmax(x, "Y"); },
                [](const double* x, double* y) { naive_softmax(x, y, N); }, 5e-7, 1e-7, -20, 20);
}

TEST(Interpreter, CausalMaskedSoftmax) {
  auto build = [](const Tensor& x) {
    auto masked = compute(
        x.shape(), [&](Var i, Var j) { return select(j <= i, x(i, j), -INFINITY); }, "masked");
    return softmax(masked, "Y");
  };
  auto naive = [row = std::int64_t{0}](const double* x, double* y) mutable {
    std::vector<double> masked(x, x + N);
    for (std::int64_t j = row + 1; j < N; ++j) masked[j] = -INFINITY;
    naive_softmax(masked.data(), y, N);
    row = (row + 1) % M;
  };
  expect_row_op(build, naive, 5e-7, 1e-7);
}

TEST(Interpreter, TanhSoftcap) {
  const double cap = 2.5;
  auto build = [&](const Tensor& x) {
    return compute(
        x.shape(), [&](Var i, Var j) { return cap * tanh(x(i, j) / cap); }, "Y");
  };
  auto naive = [&](const double* x, double* y) {
    for (std::int64_t j = 0; j < N; ++j) y[j] = cap * std::tanh(x[j] / cap);
  };
  expect_row_op(build, naive, 2e-7, 1e-7, -8, 8);
}

TEST(Interpreter, GeluErfAndTanhForms) {
  auto build_erf = [](const Tensor& x) {
    return compute(
        x.shape(), [&](Var i, Var j) { return 0.5 * x(i, j) * (1.0 + erf(x(i, j) * M_SQRT1_2)); }, "Y");
  };
  auto naive_erf = [](const double* x, double* y) {
    for (std::int64_t j = 0; j < N; ++j) y[j] = 0.5 * x[j] * (1 + std::erf(x[j] / std::sqrt(2.0)));
  };
  expect_row_op(build_erf, naive_erf, 5e-7, 2e-7);
  const double c = std::sqrt(2 / M_PI);
  auto build_tanh = [&](const Tensor& x) {
    return compute(
        x.shape(),
        [&](Var i, Var j) {
          return 0.5 * x(i, j) * (1.0 + tanh(c * (x(i, j) + 0.044715 * pow(x(i, j), 3))));
        },
        "Y");
  };
  auto naive_tanh = [&](const double* x, double* y) {
    for (std::int64_t j = 0; j < N; ++j)
      y[j] = 0.5 * x[j] * (1 + std::tanh(c * (x[j] + 0.044715 * x[j] * x[j] * x[j])));
  };
  expect_row_op(build_tanh, naive_tanh, 5e-7, 2e-7);
}

TEST(Interpreter, SigmoidLogAbsSqrtMinAndDynamicIndices) {
  auto x = placeholder({M, N}, DType::f32, "X");
  auto idx = placeholder({M}, DType::i32, "idx");
  // Shift left with a clamped (non-affine) index, and a gather through an index tensor.
  auto y = compute(
      {M, N},
      [&](Var i, Var j) {
        return sigmoid(x(i, min(j + 1, static_cast<int>(N) - 1))) + log(abs(x(idx(i), j)) + 1.0) +
               sqrt(min(abs(x(i, j)), 2.0));
      },
      "Y");
  const HostBuffer hx = HostBuffer::random(DType::f32, x.shape(), 51, -4, 4);
  const HostBuffer hidx = HostBuffer::random(DType::i32, idx.shape(), 52, 0, M);
  std::vector<double> ref(M * N);
  for (std::int64_t i = 0; i < M; ++i) {
    for (std::int64_t j = 0; j < N; ++j) {
      const double shifted = hx.get(i * N + std::min(j + 1, N - 1));
      const double gathered = hx.get(static_cast<std::int64_t>(hidx.get(i)) * N + j);
      ref[i * N + j] = 1 / (1 + std::exp(-shifted)) + std::log(std::fabs(gathered) + 1) +
                       std::sqrt(std::min(std::fabs(hx.get(i * N + j)), 2.0));
    }
  }
  expect_matches(Program({x, idx}, {y}), {hx, hidx}, {ref}, 3e-7, 1e-7);
}

// ---- Rounding and accumulation semantics ----

TEST(Interpreter, Bf16OutputsAreRoundedOnceToNearestEven) {
  constexpr std::int64_t R = 61, C = 43;
  auto a = placeholder({R, C}, DType::bf16, "A");
  auto b = placeholder({R, C}, DType::bf16, "B");
  // A bf16 product (one rounding of the exact product), a widened product cast back, and a row sum.
  auto prod = compute(
      {R, C}, [&](Var i, Var j) { return a(i, j) * b(i, j); }, "prod");
  auto widened = compute(
      {R, C}, [&](Var i, Var j) { return cast(DType::bf16, f32(a(i, j)) * f32(b(i, j)) + 1.0); }, "widened");
  auto k = reduce_axis(C, "k");
  auto rows = compute(
      {R}, [&](Var i) { return sum(a(i, k) * b(i, k), {k}); }, "rows");
  const HostBuffer ha = HostBuffer::random(DType::bf16, a.shape(), 61, -4, 4);
  const HostBuffer hb = HostBuffer::random(DType::bf16, b.shape(), 62, -4, 4);
  const auto out = evaluate(Program({a, b}, {prod, widened, rows}), {ha, hb});
  int inexact = 0;
  for (std::int64_t e = 0; e < R * C; ++e) {
    const double exact = ha.get(e) * hb.get(e);  // 16 significant bits: exact in float and double
    inexact += round_to_dtype(exact, DType::bf16) != exact;
    EXPECT_EQ(out[0].get(e), round_to_dtype(exact, DType::bf16)) << e;
    EXPECT_EQ(out[1].get(e), round_to_dtype(static_cast<float>(exact + 1.0), DType::bf16)) << e;
  }
  EXPECT_GT(inexact, R * C / 2);  // the rounding is exercised
  for (std::int64_t i = 0; i < R; ++i) {
    float acc = 0;  // an f32 accumulator over bf16 products, in the order of the reduce axis
    for (std::int64_t j = 0; j < C; ++j)
      acc += static_cast<float>(round_to_dtype(ha.get(i * C + j) * hb.get(i * C + j), DType::bf16));
    EXPECT_EQ(out[2].get(i), round_to_dtype(acc, DType::bf16)) << i;
  }
  for (const HostBuffer& buffer : out) {
    EXPECT_EQ(buffer.dtype(), DType::bf16);
    for (std::int64_t e = 0; e < buffer.numel(); ++e) {
      EXPECT_EQ(round_to_dtype(buffer.get(e), DType::bf16), buffer.get(e));
    }
  }
}

TEST(Interpreter, Fp32RoundsEveryNodeAndAccumulatorFp64DoesNot) {
  constexpr std::int64_t L = 17;
  auto x = placeholder({1, L}, DType::f32, "X");
  auto k = reduce_axis(L, "k");
  auto total = compute(
      {1}, [&](Var) { return sum(x(0, k), {k}); }, "total");
  const double tiny = 0x1p-24;  // half an ulp of 1.0 in f32
  auto chain = compute(
      {1}, [&](Var) { return (x(0, 0) + tiny) + tiny; }, "chain");
  HostBuffer hx(DType::f32, {1, L});
  hx.fill(tiny);
  hx.set(0, 1.0);
  const Program program({x}, {total, chain});
  const auto fp32 = evaluate(program, {hx});
  ReferenceOptions fp64_options;
  fp64_options.accumulation = Accumulation::kFp64;
  const auto fp64 = evaluate(program, {hx}, fp64_options);
  EXPECT_EQ(fp32[0].get(0), 1.0);  // 1 + 2^-24 ties to 1 at every step
  EXPECT_EQ(fp64[0].get(0), 1.0 + 16 * tiny);
  EXPECT_EQ(fp32[1].get(0), 1.0);
  EXPECT_EQ(fp64[1].get(0), 1.0 + 2 * tiny);
}

TEST(Interpreter, ReductionVisitsAxesInRowMajorOrderOfTheList) {
  auto x = placeholder({2, 9}, DType::f32, "X");
  auto a1 = reduce_axis(2, "a1"), b1 = reduce_axis(9, "b1"), a2 = reduce_axis(2, "a2"),
       b2 = reduce_axis(9, "b2");
  auto ab = compute(
      {1},
      [&](Var) {
        return sum(x(a1, b1), {a1, b1});
      },
      "ab");
  auto ba = compute(
      {1},
      [&](Var) {
        return sum(x(a2, b2), {b2, a2});
      },
      "ba");
  HostBuffer hx(DType::f32, {2, 9});
  for (int j = 0; j < 9; ++j) hx.set(j, 0x1p-24);
  hx.set(9, 1.0);
  const auto out = evaluate(Program({x}, {ab, ba}), {hx});
  EXPECT_EQ(out[0].get(0), 1.0 + 0x1p-21);  // 9 * 2^-24 first, then + 1: 1 + 4.5 ulp ties to 1 + 4 ulp
  EXPECT_EQ(out[1].get(0), 1.0);            // 2^-24, then + 1, then each 2^-24 is lost
}

TEST(Interpreter, MaxAndMinPropagateNan) {
  auto x = placeholder({2, 5}, DType::f32, "X");
  auto k = reduce_axis(5, "k"), k2 = reduce_axis(5, "k2");
  auto mx = compute(
      {2}, [&](Var i) { return max_reduce(x(i, k), {k}); }, "mx");
  auto mn = compute(
      {2}, [&](Var i) { return min_reduce(x(i, k2), {k2}); }, "mn");
  auto pair = compute(
      {2, 5}, [&](Var i, Var j) { return max(x(i, j), 0.0) + min(x(i, j), 0.0); }, "pair");
  HostBuffer hx(DType::f32, {2, 5});
  for (int e = 0; e < 10; ++e) hx.set(e, e - 4.5);
  hx.set(2, std::nan(""));
  const auto out = evaluate(Program({x}, {mx, mn, pair}), {hx});
  EXPECT_TRUE(std::isnan(out[0].get(0)));
  EXPECT_TRUE(std::isnan(out[1].get(0)));
  EXPECT_EQ(out[0].get(1), 4.5);
  EXPECT_EQ(out[1].get(1), 0.5);
  EXPECT_TRUE(std::isnan(out[2].get(2)));
  EXPECT_EQ(out[2].get(3), -1.5);
  EXPECT_EQ(compare(out[2], out[2]).non_finite, 1);
}

TEST(Interpreter, IntegerSemantics) {
  auto a = placeholder({6}, DType::i32, "A");
  auto b = placeholder({6}, DType::i32, "B");
  auto f = placeholder({6}, DType::f32, "F");
  auto quotient = compute(
      {6}, [&](Var i) { return a(i) / b(i); }, "quotient");
  auto wrapped = compute(
      {6}, [&](Var i) { return a(i) + b(i) * 3 - (-a(i)); }, "wrapped");
  auto powered = compute(
      {6}, [&](Var i) { return pow(b(i), 3) + abs(b(i)); }, "powered");
  auto converted = compute(
      {6}, [&](Var i) { return cast(DType::i32, f(i)); }, "converted");
  auto k = reduce_axis(6, "k"), k2 = reduce_axis(6, "k2"), k3 = reduce_axis(6, "k3");
  auto stats = compute(
      {3},
      [&](Var i) {
        return select(i == 0, sum(a(k), {k}),
                      select(i == 1, max_reduce(a(k2), {k2}), min_reduce(b(k3), {k3})));
      },
      "stats");
  const double kMin = -2147483648.0, kMax = 2147483647.0;
  HostBuffer ha(DType::i32, {6}), hb(DType::i32, {6}), hf(DType::f32, {6});
  const double av[] = {7, -7, 7, -7, kMin, kMax}, bv[] = {2, 2, -2, -2, -1, 1};
  const double fv[] = {2.7, -2.7, 1e10, -1e10, std::nan(""), 0.5};
  for (int e = 0; e < 6; ++e) {
    ha.set(e, av[e]);
    hb.set(e, bv[e]);
    hf.set(e, fv[e]);
  }
  const auto out = evaluate(Program({a, b, f}, {quotient, wrapped, powered, converted, stats}), {ha, hb, hf});
  EXPECT_EQ(values(out[0]), (std::vector<double>{3, -3, -3, 3, kMin, kMax}));  // truncation; kMin / -1 wraps
  EXPECT_EQ(values(out[1]),
            (std::vector<double>{20, -8, 8, -20, -3, 1}));  // 2 * kMin - 3 and 2 * kMax + 3 wrap
  EXPECT_EQ(values(out[2]), (std::vector<double>{10, 10, -6, -6, 0, 2}));
  EXPECT_EQ(values(out[3]), (std::vector<double>{2, -2, kMax, kMin, 0, 0}));  // saturating, NaN to 0
  EXPECT_EQ(values(out[4]), (std::vector<double>{kMin + kMax, kMax, -2}));    // 64-bit sum, wrapped
}

TEST(Interpreter, ThreadCountDoesNotChangeABit) {
  constexpr std::int64_t Mr = 130, Kr = 32, Nr = 256;  // 130 rows: two full row blocks and a tail
  auto x = placeholder({Mr, Kr}, DType::bf16, "X");
  auto w = placeholder({Kr, Nr}, DType::bf16, "W");
  auto bias = placeholder({Nr}, DType::f32, "bias");
  auto res = placeholder({Mr, Nr}, DType::f32, "R");
  auto k = reduce_axis(Kr, "k");
  auto y = compute(
      {Mr, Nr}, [&](Var i, Var j) { return sum(f32(x(i, k)) * f32(w(k, j)), {k}); }, "Y");
  auto z = compute(
      {Mr, Nr}, [&](Var i, Var j) { return y(i, j) + bias(j) + res(i, j); }, "Z");
  auto c1 = reduce_axis(Nr, "c1"), c2 = reduce_axis(Nr, "c2");
  auto mean = compute(
      {Mr}, [&](Var i) { return sum(z(i, c1), {c1}) / static_cast<double>(Nr); }, "mean");
  auto var = compute(
      {Mr}, [&](Var i) { return sum(pow(z(i, c2) - mean(i), 2), {c2}) / static_cast<double>(Nr); }, "var");
  auto out = compute(
      {Mr, Nr}, [&](Var i, Var j) { return cast(DType::bf16, (z(i, j) - mean(i)) * rsqrt(var(i) + 1e-5)); },
      "out");
  auto sm = softmax(z, "sm");
  const Program program({x, w, bias, res}, {out, sm});
  const std::vector<HostBuffer> inputs = {
      HostBuffer::random(DType::bf16, x.shape(), 71), HostBuffer::random(DType::bf16, w.shape(), 72),
      HostBuffer::random(DType::f32, bias.shape(), 73), HostBuffer::random(DType::f32, res.shape(), 74)};
  for (bool eigen : {true, false}) {
    for (Accumulation acc : {Accumulation::kFp32, Accumulation::kFp64}) {
      ReferenceOptions one{acc, 1, eigen}, two{acc, 2, eigen}, three{acc, 3, eigen};
      const auto r1 = evaluate_all(program, inputs, one), r2 = evaluate_all(program, inputs, two),
                 r3 = evaluate_all(program, inputs, three);
      ASSERT_EQ(r1.size(), 9u);
      for (const auto& [name, buffer] : r1) {
        ASSERT_EQ(buffer.size_bytes(), r2.at(name).size_bytes());
        EXPECT_EQ(std::memcmp(buffer.data(), r2.at(name).data(), buffer.size_bytes()), 0) << name;
        EXPECT_EQ(std::memcmp(buffer.data(), r3.at(name).data(), buffer.size_bytes()), 0) << name;
      }
    }
  }
}

TEST(Interpreter, EigenPathMatchesGeneralPath) {
  // K = 300 spans several of Eigen's depth blocks; M = 70 a row-block tail.
  for (bool col_major : {false, true}) {
    Gemm g = gemm(DType::f32, col_major, 70, 300, 45);
    const Program program({g.x, g.w}, {g.y});
    const std::vector<HostBuffer> inputs = {HostBuffer::random(DType::f32, g.x.shape(), 81),
                                            HostBuffer::random(DType::f32, g.w.shape(), 82)};
    for (Accumulation acc : {Accumulation::kFp32, Accumulation::kFp64}) {
      const auto fast = evaluate(program, inputs, {acc, 0, true});
      const auto general = evaluate(program, inputs, {acc, 0, false});
      const Comparison c = compare(fast[0], general[0]);
      EXPECT_LT(c.rel_error, acc == Accumulation::kFp32 ? 1e-6 : 1e-7);
      EXPECT_EQ(c.non_finite, 0);
      if (acc == Accumulation::kFp32) {
        EXPECT_GT(c.rel_error, 0.0);  // the paths really differ in order
      }
    }
  }
}

TEST(Interpreter, RecognisesContractions) {
  auto x = placeholder({M, K}, DType::bf16, "X");
  auto w = placeholder({K, N}, DType::bf16, "W");
  auto wt = placeholder({N, K}, DType::f32, "Wt");
  auto q = placeholder({2, 3, M, K}, DType::f16, "Q");
  auto kv = placeholder({3, N, K}, DType::f16, "KV");
  auto k = reduce_axis(K, "k");
  auto matches = [&](const std::function<Expr(Var, Var)>& body) {
    return detail::match_contraction(compute({M, N}, body, "Y")).has_value();
  };
  EXPECT_TRUE(matches([&](Var i, Var j) { return sum(f32(x(i, k)) * f32(w(k, j)), {k}); }));
  EXPECT_TRUE(
      matches([&](Var i, Var j) { return sum(f32(w(k, j)) * f32(x(i, k)), {k}); }));  // factors swapped
  EXPECT_TRUE(matches([&](Var i, Var j) { return sum(f32(x(i, k)) * wt(j, k), {k}); }));
  EXPECT_FALSE(matches([&](Var i, Var j) { return sum(f32(x(i, k)) * f32(w(k, j)), {k}) + 1.0; }));
  EXPECT_FALSE(matches([&](Var i, Var j) { return sum(f32(x(i, k) * w(k, j)), {k}); }));  // bf16 product
  EXPECT_FALSE(matches([&](Var i, Var j) { return sum(f32(x(i, k)) * wt(j, k) + 1.0, {k}); }));
  EXPECT_FALSE(matches([&](Var i, Var j) { return max_reduce(f32(x(i, k)) * f32(w(k, j)), {k}); }));
  EXPECT_FALSE(matches([&](Var i, Var j) { return sum(f32(x(i, k)) * f32(w(k, min(j, 3))), {k}); }));
  EXPECT_FALSE(matches([&](Var, Var j) { return sum(f32(x(0, k)) * f32(w(k, j)), {k}); }));
  auto batched = compute(
      {2, 3, M, N},
      [&](const std::vector<Var>& v) {
        return sum(f32(q(v[0], v[1], v[2], k)) * f32(kv(v[1], v[3], k)), {k});  // KV broadcast over axis 0
      },
      "B");
  const auto c = detail::match_contraction(batched);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->a.axis_of_dim, (std::vector<int>{0, 1, 2, -1}));
  EXPECT_EQ(c->b.axis_of_dim, (std::vector<int>{1, 3, -1}));

  const HostBuffer hq = HostBuffer::random(DType::f16, q.shape(), 91);
  const HostBuffer hkv = HostBuffer::random(DType::f16, kv.shape(), 92);
  std::vector<double> ref(2 * 3 * M * N);
  for (std::int64_t b0 = 0; b0 < 2; ++b0) {
    for (std::int64_t b1 = 0; b1 < 3; ++b1) {
      for (std::int64_t i = 0; i < M; ++i) {
        for (std::int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (std::int64_t kk = 0; kk < K; ++kk) {
            acc += hq.get(((b0 * 3 + b1) * M + i) * K + kk) * hkv.get((b1 * N + j) * K + kk);
          }
          ref[((b0 * 3 + b1) * M + i) * N + j] = acc;
        }
      }
    }
  }
  expect_matches(Program({q, kv}, {batched}), {hq, hkv}, {ref}, 5e-7, 1e-7);
}

TEST(Interpreter, ContractionInsideALargerBody) {
  auto x = placeholder({M, K}, DType::bf16, "X");
  auto w = placeholder({N, K}, DType::bf16, "W");
  auto bias = placeholder({N}, DType::f32, "bias");
  auto k = reduce_axis(K, "k"), k2 = reduce_axis(K, "k2");
  // Scaled and biased in one compute, and the same cast to bf16: only the reduction is the contraction.
  Expr contraction;
  auto y = compute(
      {M, N},
      [&](Var i, Var j) {
        contraction = sum(f32(x(i, k)) * f32(w(j, k)), {k});
        return contraction * 0.125 + bias(j);
      },
      "Y");
  auto yb = compute(
      {M, N},
      [&](Var i, Var j) {
        return cast(DType::bf16, sum(f32(x(i, k2)) * f32(w(j, k2)), {k2}) * 0.125 + bias(j));
      },
      "Yb");
  EXPECT_TRUE(detail::match_contraction(*y.get(), contraction).has_value());
  EXPECT_FALSE(detail::match_contraction(y).has_value());

  const HostBuffer hx = HostBuffer::random(DType::bf16, x.shape(), 101);
  const HostBuffer hw = HostBuffer::random(DType::bf16, w.shape(), 102);
  const HostBuffer hb = HostBuffer::random(DType::f32, bias.shape(), 103);
  std::vector<double> ref = naive_gemm(hx, hw, /*w_col_major=*/true);
  for (std::int64_t e = 0; e < M * N; ++e) ref[e] = ref[e] * 0.125 + hb.get(e % N);
  const Program program({x, w, bias}, {y, yb});
  expect_matches(program, {hx, hw, hb}, {ref, ref}, 3e-3, 3e-3);  // bf16 rounding of Yb dominates

  const auto fast = evaluate(program, {hx, hw, hb});
  ReferenceOptions general_options;
  general_options.contractions_through_eigen = false;
  const auto general = evaluate(program, {hx, hw, hb}, general_options);
  EXPECT_LT(rel_error(fast[0], ref), 5e-7);
  const double between = compare(fast[0], general[0]).rel_error;
  EXPECT_GT(between, 0.0);  // the Eigen path was taken: its summation order differs
  EXPECT_LT(between, 1e-6);
}

TEST(Interpreter, EvaluateAllNamesEveryCompute) {
  auto x = placeholder({4, 6}, DType::f32, "X");
  auto sm = softmax(x, "probs");
  const auto all = evaluate_all(Program({x}, {sm}), {HostBuffer::random(DType::f32, {4, 6}, 5)});
  std::vector<std::string> names;
  for (const auto& [name, buffer] : all) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"probs", "probs_exp", "probs_max", "probs_sum"}));
  EXPECT_EQ(all.at("probs_max").shape(), (std::vector<std::int64_t>{4}));
  for (std::int64_t i = 0; i < 4; ++i) {
    double total = 0;
    for (std::int64_t j = 0; j < 6; ++j) total += all.at("probs").get(i * 6 + j);
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
}

TEST(Interpreter, CompareMeasuresErrors) {
  HostBuffer ref(DType::f32, {4}), out(DType::f32, {4});
  EXPECT_EQ(compare(out, ref).rel_error, 0.0);
  const double r[] = {3, 4, 0, -INFINITY}, o[] = {3, 4.5, 0, -INFINITY};
  for (int e = 0; e < 4; ++e) {
    ref.set(e, r[e]);
    out.set(e, o[e]);
  }
  Comparison c = compare(out, ref);
  EXPECT_DOUBLE_EQ(c.rel_error, 0.1);  // 0.5 / 5; the equal infinities count as no error
  EXPECT_EQ(c.max_abs_error, 0.5);
  EXPECT_EQ(c.non_finite, 1);
  out.set(2, std::nan(""));
  c = compare(out, ref);
  EXPECT_EQ(c.non_finite, 2);
  EXPECT_TRUE(std::isinf(c.rel_error));
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  HostBuffer zero(DType::f32, {4});
  EXPECT_TRUE(std::isinf(compare(ref, zero).rel_error));
  // A bf16 output against an f32 reference.
  HostBuffer low(DType::bf16, {4});
  low.set(0, 1.0 + 0x1p-7);
  HostBuffer high(DType::f32, {4});
  high.set(0, 1.0);
  EXPECT_DOUBLE_EQ(compare(low, high).rel_error, 0x1p-7);
}

}  // namespace
}  // namespace comfuse::te
