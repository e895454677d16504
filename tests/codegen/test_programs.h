// Programs the code generator tests share: suite workloads by shape and operators that appear nowhere in the
// op library, written only with DSL primitives.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "codegen/kernel_source.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"
#include "te/ops.h"
#include "te/workloads.h"

namespace comfuse::codegen::test_programs {

/// The workload key the emitter tests stamp in the kernels' headers.
inline const std::string kKey = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

inline te::Program workload(const std::string& name, std::int64_t m, std::int64_t k, std::int64_t n) {
  return te::build_workload(name, {{"M", m}, {"K", k}, {"N", n}});
}

inline schedule::FusionPlan plan_of(const std::string& name, std::int64_t m, std::int64_t k, std::int64_t n) {
  return schedule::plan_fusion(workload(name, m, k, n));
}

/// Tiles of BM x BN whose rows combine in a cluster of `cluster_n` CTAs (in one CTA when 1), carried tiles in
/// `carried`; every other knob at its default.
inline schedule::Schedule cluster_schedule(int bm, int bn, int cluster_n, schedule::ValueHome carried) {
  schedule::Schedule s;
  s.bm = bm;
  s.bn = bn;
  s.cluster_n = cluster_n;
  s.reduction = cluster_n > 1 ? schedule::ReductionPlacement::kCluster : schedule::ReductionPlacement::kCta;
  s.carried = carried;
  return s;
}

/// A kernel's parameters as "kind:tensor" names (TMA maps with their box rows), in launch order.
inline std::vector<std::string> param_names(const KernelSource& kernel) {
  std::vector<std::string> names;
  for (const KernelParam& p : kernel.params) {
    switch (p.kind) {
      case KernelParam::Kind::kTmaA:
        names.push_back("tma_a:" + p.tensor.name());
        break;
      case KernelParam::Kind::kTmaB:
        names.push_back("tma_b:" + p.tensor.name());
        break;
      case KernelParam::Kind::kInput:
        names.push_back("in:" + p.tensor.name());
        break;
      case KernelParam::Kind::kOutput:
        names.push_back("out:" + p.tensor.name());
        break;
      case KernelParam::Kind::kStash:
        names.push_back("stash");
        break;
      case KernelParam::Kind::kTmaOut:
        names.push_back("tma_out:" + p.tensor.name() + "/" + std::to_string(p.box_rows));
        break;
      case KernelParam::Kind::kTmaIn:
        names.push_back("tma_in:" + p.tensor.name() + "/" + std::to_string(p.box_rows));
        break;
      case KernelParam::Kind::kTmaStash:
        names.push_back("tma_stash:" + p.tensor.name() + "/" + std::to_string(p.box_rows));
        break;
      case KernelParam::Kind::kTrace:
        names.push_back("trace");
        break;
    }
  }
  return names;
}

/// Ping-pong 64 x 128 tiles deferring their reduction to a finish kernel, carried tiles in the L2 stash.
inline schedule::Schedule deferred_ping_pong() {
  schedule::Schedule s;
  s.bm = 64;
  s.bn = 128;
  s.warp_roles = schedule::WarpRoles::kPingPong;
  s.carried = schedule::ValueHome::kL2Stash;
  s.reduction = schedule::ReductionPlacement::kDeferred;
  return s;
}

/// The suite's post-LN N = 1024 cluster form: ping-pong 64 x 256 tiles in clusters of four that walk the row
/// blocks on the persistent grid, three stages, the carried tile over the accumulator.
inline schedule::Schedule cluster_ping_pong_256() {
  schedule::Schedule s;
  s.bm = 64;
  s.bn = 256;
  s.stages = 3;
  s.warp_roles = schedule::WarpRoles::kPingPong;
  s.cluster_n = 4;
  s.reduction = schedule::ReductionPlacement::kCluster;
  s.persistent = s.carry_in_accumulator = true;
  return s;
}

/// GEMM, then x * sigmoid(x), then each row divided by its largest |x|.
inline te::Program silu_row_max(std::int64_t m, std::int64_t k, std::int64_t n) {
  using te::Var;
  const te::Tensor X = te::placeholder({m, k}, te::DType::bf16, "X");
  const te::Tensor W = te::placeholder({n, k}, te::DType::bf16, "W");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const te::Tensor silu = te::compute(
      {m, n}, [&](Var i, Var j) { return mm(i, j) * te::sigmoid(mm(i, j)); }, "silu");
  const Var c = te::reduce_axis(n, "c");
  const te::Tensor amax = te::compute(
      {m}, [&](Var i) { return te::max_reduce(te::abs(silu(i, c)), {c}); }, "amax");
  const te::Tensor scaled = te::compute(
      {m, n}, [&](Var i, Var j) { return silu(i, j) / amax(i); }, "scaled");
  return te::Program({X, W}, {te::cast_to(scaled, te::DType::bf16, "Y")});
}

/// A per-row f32 input, a weighted row sum reading a [N] input inside its reduction, a row value that is
/// not a reduction, and three outputs: the bf16 tile, the f32 row value and the f32 accumulator.
inline te::Program row_value_outputs(std::int64_t m, std::int64_t k, std::int64_t n) {
  using te::Var;
  const te::Tensor X = te::placeholder({m, k}, te::DType::bf16, "X");
  const te::Tensor W = te::placeholder({n, k}, te::DType::bf16, "W");
  const te::Tensor s = te::placeholder({m}, te::DType::f32, "s");
  const te::Tensor w = te::placeholder({n}, te::DType::bf16, "w");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const te::Tensor t = te::compute(
      {m, n}, [&](Var i, Var j) { return mm(i, j) * s(i); }, "t");
  const Var c = te::reduce_axis(n, "c");
  const te::Tensor wsum = te::compute(
      {m}, [&](Var i) { return te::sum(t(i, c) * te::cast(te::DType::f32, w(c)), {c}); }, "wsum");
  const te::Tensor inv = te::compute(
      {m}, [&](Var i) { return 1.0 / (wsum(i) + s(i)); }, "inv");
  const te::Tensor out = te::compute(
      {m, n}, [&](Var i, Var j) { return t(i, j) * inv(i); }, "out");
  return te::Program({X, W, s, w}, {te::cast_to(out, te::DType::bf16, "Y"), inv, mm});
}

/// Five row reductions ending stage 0 (sum, max, min, sum of squares, sum of |x|), combined in stage 1.
inline te::Program five_row_reductions(std::int64_t m, std::int64_t k, std::int64_t n) {
  using te::Var;
  const te::Tensor X = te::placeholder({m, k}, te::DType::bf16, "X");
  const te::Tensor W = te::placeholder({n, k}, te::DType::bf16, "W");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const Var c0 = te::reduce_axis(n, "c0"), c1 = te::reduce_axis(n, "c1"), c2 = te::reduce_axis(n, "c2"),
            c3 = te::reduce_axis(n, "c3"), c4 = te::reduce_axis(n, "c4");
  const te::Tensor stats = te::compute(
      {m},
      [&](Var i) {
        return te::sum(mm(i, c0), {c0}) + te::max_reduce(mm(i, c1), {c1}) - te::min_reduce(mm(i, c2), {c2}) +
               te::sum(mm(i, c3) * mm(i, c3), {c3}) * te::sum(te::abs(mm(i, c4)), {c4});
      },
      "stats");
  const te::Tensor out = te::compute(
      {m, n}, [&](Var i, Var j) { return mm(i, j) / stats(i); }, "out");
  return te::Program({X, W}, {te::cast_to(out, te::DType::bf16, "Y")});
}

/// The row sums of a GEMM, the program's only output.
inline te::Program row_sums(std::int64_t m, std::int64_t k, std::int64_t n) {
  using te::Var;
  const te::Tensor X = te::placeholder({m, k}, te::DType::bf16, "X");
  const te::Tensor W = te::placeholder({n, k}, te::DType::bf16, "W");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const Var c = te::reduce_axis(n, "c");
  return te::Program({X, W}, {te::compute(
                                 {m}, [&](Var i) { return te::sum(mm(i, c), {c}); }, "rowsum")});
}

/// Softmax of a GEMM under a causal mask written with a comparison of the iteration variables; f16 operands.
inline te::Program masked_softmax_f16(std::int64_t m, std::int64_t k, std::int64_t n) {
  using te::Var;
  const te::Tensor X = te::placeholder({m, k}, te::DType::f16, "X");
  const te::Tensor W = te::placeholder({n, k}, te::DType::f16, "W");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const te::Tensor masked = te::compute(
      {m, n},
      [&](Var i, Var j) {
        return te::select(j <= i, mm(i, j),
                          te::constant(te::DType::f32, -std::numeric_limits<double>::infinity()));
      },
      "masked");
  return te::Program({X, W}, {te::cast_to(te::softmax(masked, "sm"), te::DType::f16, "Y")});
}

/// GEMM + bias + GELU (erf form) with f16 operands and an f16 output.
inline te::Program gemm_bias_gelu_f16(std::int64_t m, std::int64_t k, std::int64_t n) {
  const te::Tensor X = te::placeholder({m, k}, te::DType::f16, "X");
  const te::Tensor W = te::placeholder({n, k}, te::DType::f16, "W");
  const te::Tensor b = te::placeholder({n}, te::DType::f16, "b");
  const te::Tensor mm = te::matmul(X, W, te::BLayout::kColMajor, "mm");
  const te::Tensor act = te::gelu_erf(te::bias_add(mm, b, "biased"), "act");
  return te::Program({X, W, b}, {te::cast_to(act, te::DType::f16, "Y")});
}

}  // namespace comfuse::codegen::test_programs
