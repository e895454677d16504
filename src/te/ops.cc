// The op library's shared checks and its linear ops: matmul, bias and residual adds, scale, cast.
#include "te/ops.h"

#include <cmath>

#include "support/error.h"
#include "te/ops_internal.h"
#include "te/printer.h"

namespace comfuse::te {
namespace ops_internal {

std::string op_prefix(const std::string& op, const std::string& name) {
  return op + " '" + name + "': ";
}

void require_name(const std::string& op, const std::string& name) {
  if (!is_identifier(name)) {
    throw CompileError(op_prefix(op, name) +
                       "the result name is not an identifier (letters, digits, '_', not "
                       "first a digit)");
  }
}

void require_defined(const std::string& op, const std::string& name, const std::string& role,
                     const Tensor& t) {
  if (t.get() == nullptr) throw CompileError(op_prefix(op, name) + role + " is an undefined tensor");
}

void require_float(const std::string& op, const std::string& name, const std::string& role, const Tensor& t) {
  if (!is_float(t.dtype())) {
    throw CompileError(op_prefix(op, name) + role + " '" + t.name() + "' has dtype " +
                       std::string(dtype_name(t.dtype())) + "; expected f32, f16 or bf16 (insert a cast_to)");
  }
}

void require_min_rank(const std::string& op, const std::string& name, const std::string& role,
                      const Tensor& t, std::size_t min_rank, const std::string& expected) {
  if (t.shape().size() < min_rank) {
    throw CompileError(op_prefix(op, name) + role + " '" + t.name() + "' has shape " +
                       shape_to_string(t.shape()) + "; expected " + expected);
  }
}

void require_row_vector(const std::string& op, const std::string& name, const std::string& role,
                        const Tensor& v, const Tensor& Y) {
  require_defined(op, name, role, v);
  require_float(op, name, role, v);
  const std::int64_t n = Y.shape().back();
  if (v.shape().size() != 1 || v.shape()[0] != n) {
    throw CompileError(op_prefix(op, name) + role + " '" + v.name() + "' has shape " +
                       shape_to_string(v.shape()) + " but Y '" + Y.name() + "' has N=" + std::to_string(n) +
                       " on its last axis; expected [" + std::to_string(n) + "]");
  }
}

void require_scalar(const std::string& op, const std::string& name, const std::string& what, double value,
                    bool allow_zero) {
  const bool ok = std::isfinite(value) && (allow_zero ? value >= 0 : value > 0);
  if (!ok) {
    throw CompileError(op_prefix(op, name) + what + " is " + format_double(value) + "; expected a finite " +
                       (allow_zero ? "non-negative" : "positive") + " value");
  }
}

Expr f32(Expr e) {
  return e.dtype() == DType::f32 ? e : cast(DType::f32, std::move(e));
}

Expr read_f32(const Tensor& t, const std::vector<Var>& indices) {
  return f32(t.read(std::vector<Expr>(indices.begin(), indices.end())));
}

std::vector<Var> leading(const std::vector<Var>& axes, std::size_t count) {
  return std::vector<Var>(axes.begin(), axes.begin() + static_cast<std::ptrdiff_t>(count));
}

}  // namespace ops_internal

using namespace ops_internal;

Tensor matmul(const Tensor& A, const Tensor& B, BLayout b_layout, const std::string& name) {
  const std::string op = "matmul";
  require_name(op, name);
  require_defined(op, name, "A", A);
  require_defined(op, name, "B", B);
  const std::size_t rank = A.shape().size();
  if (rank != 2 && rank != 3) {
    throw CompileError(op_prefix(op, name) + "A '" + A.name() + "' has shape " + shape_to_string(A.shape()) +
                       "; expected [M, K] or batched [Bt, M, K]");
  }
  if (B.shape().size() != rank) {
    throw CompileError(op_prefix(op, name) + "A '" + A.name() + "' has rank " + std::to_string(rank) +
                       " but B '" + B.name() + "' has rank " + std::to_string(B.shape().size()) + " (shape " +
                       shape_to_string(B.shape()) + ")");
  }
  require_float(op, name, "A", A);
  require_float(op, name, "B", B);
  const bool batched = rank == 3;
  if (batched && A.shape()[0] != B.shape()[0]) {
    throw CompileError(op_prefix(op, name) + "A '" + A.name() + "' has batch " +
                       std::to_string(A.shape()[0]) + " but B '" + B.name() + "' has batch " +
                       std::to_string(B.shape()[0]));
  }
  const std::int64_t m = A.shape()[rank - 2];
  const std::int64_t k_a = A.shape()[rank - 1];
  const bool row_major = b_layout == BLayout::kRowMajor;
  const std::int64_t k_b = B.shape()[row_major ? rank - 2 : rank - 1];
  const std::int64_t n = B.shape()[row_major ? rank - 1 : rank - 2];
  if (k_a != k_b) {
    throw CompileError(op_prefix(op, name) + "A '" + A.name() + "' has K=" + std::to_string(k_a) +
                       " but B '" + B.name() + "' has K=" + std::to_string(k_b) + " (A " +
                       shape_to_string(A.shape()) + ", B " + shape_to_string(B.shape()) +
                       (row_major ? " row-major [K, N])" : " col-major [N, K])"));
  }
  std::vector<std::int64_t> shape = {m, n};
  if (batched) shape.insert(shape.begin(), A.shape()[0]);
  const Var k = reduce_axis(k_a, "k");
  return compute(
      shape,
      [&](const std::vector<Var>& axes) {
        const Var i = axes[rank - 2], j = axes[rank - 1];
        std::vector<Var> a_index = {i, k},
                         b_index = row_major ? std::vector<Var>{k, j} : std::vector<Var>{j, k};
        if (batched) {
          a_index.insert(a_index.begin(), axes[0]);
          b_index.insert(b_index.begin(), axes[0]);
        }
        return sum(read_f32(A, a_index) * read_f32(B, b_index), {k});
      },
      name);
}

Tensor bias_add(const Tensor& Y, const Tensor& b, const std::string& name) {
  require_name("bias_add", name);
  require_defined("bias_add", name, "Y", Y);
  require_row_vector("bias_add", name, "bias", b, Y);
  return elementwise("bias_add", Y, name, [&](const Expr& x, const std::vector<Var>& axes) {
    return x + read_f32(b, {axes.back()});
  });
}

Tensor residual_add(const Tensor& Y, const Tensor& R, const std::string& name) {
  const std::string op = "residual_add";
  require_name(op, name);
  require_defined(op, name, "Y", Y);
  require_defined(op, name, "residual", R);
  require_float(op, name, "residual", R);
  if (R.shape() != Y.shape()) {
    throw CompileError(op_prefix(op, name) + "residual '" + R.name() + "' has shape " +
                       shape_to_string(R.shape()) + " but Y '" + Y.name() + "' has shape " +
                       shape_to_string(Y.shape()));
  }
  return elementwise(op, Y, name,
                     [&](const Expr& x, const std::vector<Var>& axes) { return x + read_f32(R, axes); });
}

Tensor scale(const Tensor& Y, double s, const std::string& name) {
  require_name("scale", name);
  if (!std::isfinite(s)) {
    throw CompileError(op_prefix("scale", name) + "factor is " + format_double(s) +
                       "; expected a finite value");
  }
  return elementwise("scale", Y, name, [&](const Expr& x, const std::vector<Var>&) { return x * s; });
}

Tensor cast_to(const Tensor& Y, DType dtype, const std::string& name) {
  const std::string op = "cast_to";
  require_name(op, name);
  require_defined(op, name, "Y", Y);
  if (dtype == DType::boolean) {
    throw CompileError(op_prefix(op, name) + "cannot cast '" + Y.name() +
                       "' to bool; use a compare and select");
  }
  return compute(
      Y.shape(),
      [&](const std::vector<Var>& axes) {
        return cast(dtype, Y.read(std::vector<Expr>(axes.begin(), axes.end())));
      },
      name);
}

}  // namespace comfuse::te
