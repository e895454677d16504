// Row reductions of the op library: layer_norm, rms_norm and softmax over the last axis.
#include "support/error.h"
#include "te/ops.h"
#include "te/ops_internal.h"

namespace comfuse::te {

using namespace ops_internal;

namespace {

// Y's shape without its last axis: the shape of a per-row statistic.
std::vector<std::int64_t> row_shape(const Tensor& Y) {
  return std::vector<std::int64_t>(Y.shape().begin(), Y.shape().end() - 1);
}

// Checks shared by the row ops: Y defined, float, of rank ≥ 2.
void require_rows(const std::string& op, const std::string& name, const Tensor& Y) {
  require_name(op, name);
  require_defined(op, name, "Y", Y);
  require_float(op, name, "Y", Y);
  require_min_rank(op, name, "Y", Y, 2, "[.., N] with at least 2 axes (give a vector shape [1, N])");
}

// A per-row statistic over the last axis: stat[r] = fn(f32(Y[r, j]), r, j) with j a fresh reduce axis.
template <typename F>
Tensor row_stat(const Tensor& Y, const std::string& name, F&& fn) {
  const Var j = reduce_axis(Y.shape().back(), "j");
  return compute(
      row_shape(Y),
      [&](const std::vector<Var>& rows) {
        std::vector<Var> at = rows;
        at.push_back(j);
        return fn(read_f32(Y, at), rows, j);
      },
      name);
}

}  // namespace

Tensor layer_norm(const Tensor& Y, const Tensor& gamma, const Tensor& beta, double eps,
                  const std::string& name) {
  const std::string op = "layer_norm";
  require_rows(op, name, Y);
  require_row_vector(op, name, "gamma", gamma, Y);
  require_row_vector(op, name, "beta", beta, Y);
  require_scalar(op, name, "eps", eps, /*allow_zero=*/true);
  const double n = static_cast<double>(Y.shape().back());
  const Tensor mean = row_stat(Y, name + "_mean", [&](const Expr& x, const std::vector<Var>&, const Var& j) {
    return sum(x, {j}) / n;
  });
  const Tensor var =
      row_stat(Y, name + "_var", [&](const Expr& x, const std::vector<Var>& rows, const Var& j) {
        return sum(pow(x - read_f32(mean, rows), 2), {j}) / n;
      });
  return elementwise(op, Y, name, [&](const Expr& x, const std::vector<Var>& axes) {
    const std::vector<Var> rows = leading(axes, axes.size() - 1);
    return (x - read_f32(mean, rows)) * rsqrt(read_f32(var, rows) + eps) * read_f32(gamma, {axes.back()}) +
           read_f32(beta, {axes.back()});
  });
}

Tensor rms_norm(const Tensor& Y, const Tensor& gamma, double eps, const std::string& name) {
  const std::string op = "rms_norm";
  require_rows(op, name, Y);
  require_row_vector(op, name, "gamma", gamma, Y);
  require_scalar(op, name, "eps", eps, /*allow_zero=*/true);
  const double n = static_cast<double>(Y.shape().back());
  const Tensor ms = row_stat(Y, name + "_ms", [&](const Expr& x, const std::vector<Var>&, const Var& j) {
    return sum(pow(x, 2), {j}) / n;
  });
  return elementwise(op, Y, name, [&](const Expr& x, const std::vector<Var>& axes) {
    const std::vector<Var> rows = leading(axes, axes.size() - 1);
    return x * rsqrt(read_f32(ms, rows) + eps) * read_f32(gamma, {axes.back()});
  });
}

Tensor softmax(const Tensor& Y, const std::string& name) {
  const std::string op = "softmax";
  require_rows(op, name, Y);
  const Tensor row_max =
      row_stat(Y, name + "_max",
               [&](const Expr& x, const std::vector<Var>&, const Var& j) { return max_reduce(x, {j}); });
  const Tensor e = elementwise(op, Y, name + "_exp", [&](const Expr& x, const std::vector<Var>& axes) {
    return exp(x - read_f32(row_max, leading(axes, axes.size() - 1)));
  });
  const Tensor row_sum = row_stat(
      e, name + "_sum", [&](const Expr& x, const std::vector<Var>&, const Var& j) { return sum(x, {j}); });
  return elementwise(op, e, name, [&](const Expr& x, const std::vector<Var>& axes) {
    return x / read_f32(row_sum, leading(axes, axes.size() - 1));
  });
}

}  // namespace comfuse::te
