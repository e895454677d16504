// Private helpers shared by the op library's source files: input checks and element reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "te/tensor.h"

namespace comfuse::te::ops_internal {

/// "[4, 8]".
std::string shape_text(const std::vector<std::int64_t>& shape);

/// The prefix of every op error: "<op> '<name>': ".
std::string op_prefix(const std::string& op, const std::string& name);

/// Throws when `name` (the op's result name) is not an identifier.
void require_name(const std::string& op, const std::string& name);

/// Throws CompileError "<op> '<name>': <role> is an undefined tensor" when `t` is null.
void require_defined(const std::string& op, const std::string& name, const std::string& role,
                     const Tensor& t);

/// Throws when `t` is not of a float dtype (f32, f16, bf16).
void require_float(const std::string& op, const std::string& name, const std::string& role, const Tensor& t);

/// Throws when t's rank is below `min_rank`; `expected` describes the accepted shapes ("[.., N]").
void require_min_rank(const std::string& op, const std::string& name, const std::string& role,
                      const Tensor& t, std::size_t min_rank, const std::string& expected);

/// Throws when `v` (a per-column vector such as a bias or gamma) is not 1-D of extent Y's last axis.
void require_row_vector(const std::string& op, const std::string& name, const std::string& role,
                        const Tensor& v, const Tensor& Y);

/// Throws when `value` is not finite, or not positive (`allow_zero` false) / negative (`allow_zero` true).
void require_scalar(const std::string& op, const std::string& name, const std::string& what, double value,
                    bool allow_zero);

/// `e` as f32: e itself when already f32, else cast(f32, e).
Expr f32(Expr e);

/// f32(t[indices...]).
Expr read_f32(const Tensor& t, const std::vector<Var>& indices);

/// The first `count` of `axes`, as read indices.
std::vector<Var> leading(const std::vector<Var>& axes, std::size_t count);

/// An f32 compute of Y's shape: out[...] = fn(f32(Y[...]), axes). Checks Y is defined and of a float dtype.
template <typename F>
Tensor elementwise(const std::string& op, const Tensor& Y, const std::string& name, F&& fn) {
  require_name(op, name);
  require_defined(op, name, "Y", Y);
  require_float(op, name, "Y", Y);
  return compute(
      Y.shape(), [&](const std::vector<Var>& axes) { return fn(read_f32(Y, axes), axes); }, name);
}

}  // namespace comfuse::te::ops_internal
