// Tensors of the DSL: placeholders (inputs) and computes (one expression per output element).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "te/expr.h"

namespace comfuse::te {

enum class TensorKind : std::uint8_t { kPlaceholder, kCompute };

struct TensorNode {
  std::string name;
  std::vector<std::int64_t> shape;
  DType dtype;
  TensorKind kind;
  std::vector<Var> axes;  // compute only: one iteration variable per output axis
  Expr body;              // compute only: the value of element (axes...)
};

/// A shared handle to an immutable tensor. Reading it, `X(i, k)`, makes a read expression; reading with
/// fewer indices than X has axes is an error: broadcasting is written by reading a lower-rank tensor.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> node) : node_(std::move(node)) {}

  const TensorNode* get() const { return node_.get(); }
  const TensorNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& node() const { return node_; }
  const std::string& name() const { return node_->name; }
  const std::vector<std::int64_t>& shape() const { return node_->shape; }
  DType dtype() const { return node_->dtype; }
  bool is_placeholder() const { return node_->kind == TensorKind::kPlaceholder; }
  bool same_as(const Tensor& other) const { return node_ == other.node_; }

  /// A read of this tensor at `indices` (i32 expressions, one per axis). Throws CompileError naming the
  /// tensor on a wrong number of indices or a non-i32 index.
  Expr read(std::vector<Expr> indices) const;

  template <typename... Index>
  Expr operator()(Index&&... indices) const {
    return read(std::vector<Expr>{Expr(std::forward<Index>(indices))...});
  }

 private:
  std::shared_ptr<const TensorNode> node_;
};

/// An input tensor. Names must be identifiers; shapes positive.
Tensor placeholder(std::vector<std::int64_t> shape, DType dtype, std::string name);

/// A computed tensor: element (axes...) = fcompute(axes). The body's dtype is the tensor's dtype. The body
/// is validated here; errors name the tensor: variables out of scope, reduce axes used outside their
/// reduction or in two reductions, indices provably out of range.
Tensor compute(std::vector<std::int64_t> shape, const std::function<Expr(const std::vector<Var>&)>& fcompute,
               std::string name);

/// compute with one Var parameter per output axis: compute({M, N}, [&](Var i, Var j) { ... }, "Y").
template <typename F>
requires(!std::is_invocable_v<F, const std::vector<Var>&>) Tensor
    compute(std::vector<std::int64_t> shape, F&& fcompute, std::string name) {
  return compute(
      std::move(shape),
      [&](const std::vector<Var>& axes) -> Expr {
        if constexpr (std::is_invocable_v<F, Var>) {
          if (axes.size() == 1) return fcompute(axes[0]);
        } else if constexpr (std::is_invocable_v<F, Var, Var>) {
          if (axes.size() == 2) return fcompute(axes[0], axes[1]);
        } else if constexpr (std::is_invocable_v<F, Var, Var, Var>) {
          if (axes.size() == 3) return fcompute(axes[0], axes[1], axes[2]);
        } else if constexpr (std::is_invocable_v<F, Var, Var, Var, Var>) {
          if (axes.size() == 4) return fcompute(axes[0], axes[1], axes[2], axes[3]);
        }
        return Expr();
      },
      std::move(name));
}

/// Builds a compute directly from its parts (used by the JSON parser). Validates like compute().
Tensor make_compute(std::vector<std::int64_t> shape, std::vector<Var> axes, Expr body, std::string name);

/// True when `name` is a C identifier that generated code can use.
bool is_identifier(const std::string& name);

}  // namespace comfuse::te
