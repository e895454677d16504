// Elementwise activations of the op library (relu, the two GELUs, tanh soft-capping) and the causal mask.
#include <cmath>
#include <limits>
#include <numbers>

#include "support/error.h"
#include "te/ops.h"
#include "te/ops_internal.h"
#include "te/printer.h"

namespace comfuse::te {

using namespace ops_internal;

Tensor relu(const Tensor& Y, const std::string& name) {
  return elementwise("relu", Y, name,
                     [](const Expr& x, const std::vector<Var>&) { return max(x, constant_like(x, 0.0)); });
}

Tensor gelu_tanh(const Tensor& Y, const std::string& name) {
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
  return elementwise("gelu_tanh", Y, name, [&](const Expr& x, const std::vector<Var>&) {
    return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * pow(x, 3))));
  });
}

Tensor gelu_erf(const Tensor& Y, const std::string& name) {
  const double inv_sqrt_2 = 1.0 / std::numbers::sqrt2;
  return elementwise("gelu_erf", Y, name, [&](const Expr& x, const std::vector<Var>&) {
    return 0.5 * x * (1.0 + erf(x * inv_sqrt_2));
  });
}

Tensor tanh_softcap(const Tensor& Y, double cap, const std::string& name) {
  require_name("tanh_softcap", name);
  require_scalar("tanh_softcap", name, "cap", cap, /*allow_zero=*/false);
  return elementwise("tanh_softcap", Y, name,
                     [&](const Expr& x, const std::vector<Var>&) { return cap * tanh(x / cap); });
}

Tensor causal_mask(const Tensor& S, const std::string& name) {
  const std::string op = "causal_mask";
  require_name(op, name);
  require_defined(op, name, "S", S);
  require_min_rank(op, name, "S", S, 2, "[.., Lq, Lk]");
  const std::size_t rank = S.shape().size();
  const std::int64_t lq = S.shape()[rank - 2], lk = S.shape()[rank - 1];
  if (lq > lk) {
    throw CompileError(op_prefix(op, name) + "S '" + S.name() +
                       "' has query length Lq=" + std::to_string(lq) +
                       " > key length Lk=" + std::to_string(lk) + " (shape " + shape_to_string(S.shape()) +
                       "): its first " + std::to_string(lq - lk) + " rows would be fully masked");
  }
  const double neg_inf = -std::numeric_limits<double>::infinity();
  return elementwise(op, S, name, [&](const Expr& x, const std::vector<Var>& axes) {
    const Expr i = axes[rank - 2], j = axes[rank - 1];
    const Expr visible = lq == lk ? j <= i : j <= i + static_cast<int>(lk - lq);
    return select(visible, x, constant(DType::f32, neg_inf));
  });
}

}  // namespace comfuse::te
