// Compilation of compute bodies into instruction lists (see compiled_body.h).
#include "te/compiled_body.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "support/error.h"

namespace comfuse::te::detail {
namespace {

// An index as sum(coeff * var) + offset, when it is one.
struct Linear {
  std::map<const VarNode*, std::int64_t> coeffs;
  std::int64_t offset = 0;
};

std::optional<Linear> as_linear(const Expr& e) {
  if (const auto* imm = e.as<IntImmNode>()) return Linear{{}, imm->value};
  if (const auto* var = e.as<VarNode>()) return Linear{{{var, 1}}, 0};
  if (const auto* neg = e.as<UnaryNode>(); neg && neg->op == UnaryOp::kNeg) {
    auto a = as_linear(neg->value);
    if (!a) return std::nullopt;
    for (auto& [var, c] : a->coeffs) c = -c;
    a->offset = -a->offset;
    return a;
  }
  const auto* bin = e.as<BinaryNode>();
  if (bin == nullptr) return std::nullopt;
  auto a = as_linear(bin->a), b = as_linear(bin->b);
  if (!a || !b) return std::nullopt;
  switch (bin->op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub: {
      const std::int64_t sign = bin->op == BinaryOp::kAdd ? 1 : -1;
      for (auto [var, c] : b->coeffs) a->coeffs[var] += sign * c;
      a->offset += sign * b->offset;
      return a;
    }
    case BinaryOp::kMul: {
      if (!a->coeffs.empty() && !b->coeffs.empty()) return std::nullopt;
      const std::int64_t factor = a->coeffs.empty() ? a->offset : b->offset;
      Linear result = a->coeffs.empty() ? *b : *a;
      for (auto& [var, c] : result.coeffs) c *= factor;
      result.offset *= factor;
      return result;
    }
    case BinaryOp::kDiv:
    case BinaryOp::kMin:
    case BinaryOp::kMax:
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

class Compiler {
 public:
  Compiler(const TensorNode& tensor, const Precomputed& precomputed)
      : tensor_(tensor), precomputed_(precomputed) {
    body_.blocks.emplace_back();
    body_.axis_regs.assign(tensor.axes.size(), -1);
    body_.result = compile(tensor.body, 0);
  }

  CompiledBody take() { return std::move(body_); }

 private:
  // Code that does not depend on the current reduction's variables is placed in the outer block, so it runs
  // once per element instead of once per reduction step.
  int compile(const Expr& e, int block) {
    if (block != 0 && !depends_on_reduce_var(e)) block = 0;
    const auto key = std::make_pair(e.get(), block);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const int reg = emit(e, block);
    memo_.emplace(key, reg);
    return reg;
  }

  bool depends_on_reduce_var(const Expr& e) {
    if (auto it = depends_.find(e.get()); it != depends_.end()) return it->second;
    bool result = false;
    if (const auto* var = e.as<VarNode>()) {
      result = var->var_kind == VarKind::kReduce;
    } else {
      for_each_child(e, [&](const Expr& child) { result = depends_on_reduce_var(child) || result; });
    }
    depends_.emplace(e.get(), result);
    return result;
  }

  int new_reg() { return body_.num_regs++; }

  int constant(double value) {
    const int reg = new_reg();
    body_.constants.emplace_back(reg, value);
    return reg;
  }

  int push(Instr instr, int block) {
    instr.dst = new_reg();
    body_.blocks[static_cast<std::size_t>(block)].code.push_back(std::move(instr));
    return body_.blocks[static_cast<std::size_t>(block)].code.back().dst;
  }

  static Instr make(InstrKind kind, const Expr& e, std::uint8_t op = 0) {
    Instr instr;
    instr.kind = kind;
    instr.op = op;
    instr.dtype = e.dtype();
    instr.expr = e;
    return instr;
  }

  int emit(const Expr& e, int block) {
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return constant(static_cast<double>(e.as<IntImmNode>()->value));
      case ExprKind::kFloatImm:
        return constant(e.as<FloatImmNode>()->value);
      case ExprKind::kVar:
        return var_reg(e.as<VarNode>(), block);
      case ExprKind::kBinary: {
        const auto* n = e.as<BinaryNode>();
        Instr instr = make(InstrKind::kBinary, e, static_cast<std::uint8_t>(n->op));
        instr.a = compile(n->a, block);
        instr.b = compile(n->b, block);
        return push(std::move(instr), block);
      }
      case ExprKind::kCompare: {
        const auto* n = e.as<CompareNode>();
        Instr instr = make(InstrKind::kCompare, e, static_cast<std::uint8_t>(n->op));
        instr.a = compile(n->a, block);
        instr.b = compile(n->b, block);
        return push(std::move(instr), block);
      }
      case ExprKind::kSelect: {
        const auto* n = e.as<SelectNode>();
        Instr instr = make(InstrKind::kSelect, e);
        instr.a = compile(n->cond, block);
        instr.b = compile(n->if_true, block);
        instr.c = compile(n->if_false, block);
        return push(std::move(instr), block);
      }
      case ExprKind::kCast: {
        const Expr& value = e.as<CastNode>()->value;
        // A cast to the same dtype, or from bf16/f16 to f32, does not change the value.
        const DType from = value.dtype(), to = e.dtype();
        if (from == to || (to == DType::f32 && (from == DType::bf16 || from == DType::f16))) {
          return compile(value, block);
        }
        Instr instr = make(InstrKind::kCast, e);
        instr.a = compile(value, block);
        return push(std::move(instr), block);
      }
      case ExprKind::kUnary: {
        const auto* n = e.as<UnaryNode>();
        Instr instr = make(InstrKind::kUnary, e, static_cast<std::uint8_t>(n->op));
        instr.a = compile(n->value, block);
        return push(std::move(instr), block);
      }
      case ExprKind::kPow: {
        const auto* n = e.as<PowNode>();
        Instr instr = make(InstrKind::kPow, e);
        instr.a = compile(n->base, block);
        instr.exponent = n->exponent;
        return push(std::move(instr), block);
      }
      case ExprKind::kRead:
        return emit_read(e, block);
      case ExprKind::kReduce:
        return emit_reduce(e, block);
    }
    throw InternalError("interpreter: unknown expression kind");
  }

  int var_reg(const VarNode* var, int block) {
    for (std::size_t d = 0; d < tensor_.axes.size(); ++d) {
      if (tensor_.axes[d].get() != var) continue;
      if (body_.axis_regs[d] < 0) body_.axis_regs[d] = new_reg();
      return body_.axis_regs[d];
    }
    Block& b = body_.blocks[static_cast<std::size_t>(block)];
    for (std::size_t p = 0; p < b.vars.size(); ++p) {
      if (b.vars[p] != var) continue;
      if (b.var_regs[p] < 0) b.var_regs[p] = new_reg();
      return b.var_regs[p];
    }
    throw InternalError("interpreter: variable '" + var->name + "' is not in scope in compute '" +
                        tensor_.name + "'");
  }

  int emit_read(const Expr& e, int block) {
    const auto* n = e.as<ReadNode>();
    const TensorNode& source = *n->tensor;
    const std::vector<std::int64_t> strides = strides_of(source.shape);
    ReadPlan plan;
    plan.tensor = &source;
    plan.axis_coeffs.assign(tensor_.axes.size(), 0);
    plan.reduce_coeffs.assign(body_.blocks[static_cast<std::size_t>(block)].vars.size(), 0);
    for (std::size_t d = 0; d < n->indices.size(); ++d) {
      if (!fold_linear(n->indices[d], strides[d], source.shape[d], block, plan)) {
        const int reg = compile(n->indices[d], block);
        plan.dynamic.push_back({static_cast<int>(d), reg, strides[d], source.shape[d]});
      }
    }
    const int read = static_cast<int>(body_.reads.size());
    body_.reads.push_back(std::move(plan));
    if (block != 0) body_.blocks[static_cast<std::size_t>(block)].reads.push_back(read);
    Instr instr = make(InstrKind::kRead, e);
    instr.read = read;
    return push(std::move(instr), block);
  }

  // Adds an affine index whose range lies inside [0, extent) to the plan's coefficients; false otherwise.
  bool fold_linear(const Expr& index, std::int64_t stride, std::int64_t extent, int block, ReadPlan& plan) {
    const std::optional<Linear> linear = as_linear(index);
    if (!linear) return false;
    const Block& b = body_.blocks[static_cast<std::size_t>(block)];
    std::int64_t lo = linear->offset, hi = linear->offset;
    std::vector<std::pair<std::int64_t*, std::int64_t>> updates;
    for (auto [var, c] : linear->coeffs) {
      if (c == 0) continue;
      std::int64_t* slot = nullptr;
      for (std::size_t d = 0; d < tensor_.axes.size(); ++d) {
        if (tensor_.axes[d].get() == var) slot = &plan.axis_coeffs[d];
      }
      for (std::size_t p = 0; p < b.vars.size(); ++p) {
        if (b.vars[p] == var) slot = &plan.reduce_coeffs[p];
      }
      if (slot == nullptr) return false;
      const std::int64_t top = c * (var->extent - 1);
      lo += std::min<std::int64_t>(0, top);
      hi += std::max<std::int64_t>(0, top);
      updates.emplace_back(slot, c * stride);
    }
    if (lo < 0 || hi >= extent) return false;
    for (auto [slot, delta] : updates) *slot += delta;
    plan.offset += linear->offset * stride;
    return true;
  }

  int emit_reduce(const Expr& e, int block) {
    COMFUSE_CHECK(block == 0, "nested reduction in compute '" + tensor_.name + "'");
    if (auto it = precomputed_.find(e.get()); it != precomputed_.end()) {
      // A row-major tensor of the compute's shape, read at the element's own position.
      ReadPlan plan;
      plan.precomputed = it->second;
      plan.axis_coeffs = strides_of(tensor_.shape);
      body_.reads.push_back(std::move(plan));
      Instr instr = make(InstrKind::kRead, e);
      instr.read = static_cast<int>(body_.reads.size()) - 1;
      return push(std::move(instr), 0);
    }
    const auto* n = e.as<ReduceNode>();
    const int body_block = static_cast<int>(body_.blocks.size());
    Block b;
    for (const Var& axis : n->axes) {
      b.vars.push_back(axis.get());
      b.extents.push_back(axis.extent());
    }
    b.var_regs.assign(b.vars.size(), -1);
    body_.blocks.push_back(std::move(b));
    const int result = compile(n->body, body_block);
    body_.blocks[static_cast<std::size_t>(body_block)].result = result;
    Instr instr = make(InstrKind::kReduce, e, static_cast<std::uint8_t>(n->op));
    instr.block = body_block;
    return push(std::move(instr), 0);
  }

  const TensorNode& tensor_;
  const Precomputed& precomputed_;
  CompiledBody body_;
  std::map<std::pair<const ExprNode*, int>, int> memo_;
  std::unordered_map<const ExprNode*, bool> depends_;
};

}  // namespace

CompiledBody compile_body(const TensorNode& tensor, const Precomputed& precomputed) {
  return Compiler(tensor, precomputed).take();
}

}  // namespace comfuse::te::detail
