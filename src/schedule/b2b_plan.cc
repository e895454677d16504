// Recognition of chained contractions and the derivation of the online form of reductions between them.
#include "schedule/b2b_plan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "schedule/fusion_plan.h"
#include "schedule/read_match.h"
#include "support/error.h"
#include "te/expr_inl.h"
#include "te/extract.h"
#include "te/printer.h"

namespace comfuse::schedule {
namespace {

using te::Expr;
using te::ExprKind;
using te::Tensor;

// out[b.., i, j] = sum_k A[b.., i, k] * B[b.., j, k] (or B[b.., k, j]); nullopt when `t` is no contraction.
std::optional<Contraction> match_contraction(const Tensor& t) {
  const std::optional<ProductSum> shape = match_product_sum(t);
  if (!shape) return std::nullopt;
  const te::ReduceNode* reduce = shape->reduce;
  const te::BinaryNode* mul = shape->product;
  const te::ReadNode* a = shape->a;
  const te::ReadNode* b = shape->b;
  const std::size_t rank = t.shape().size();
  std::vector<const te::VarNode*> batch;
  for (std::size_t d = 0; d + 2 < rank; ++d) batch.push_back(t->axes[d].get());
  const te::VarNode* i = t->axes[rank - 2].get();
  const te::VarNode* j = t->axes[rank - 1].get();
  const te::VarNode* k = reduce->axes[0].get();
  auto with = [&](std::initializer_list<const te::VarNode*> tail) {
    std::vector<const te::VarNode*> vars = batch;
    vars.insert(vars.end(), tail);
    return vars;
  };
  Contraction c;
  c.tensor = t;
  c.a = Tensor(a->tensor);
  c.b = Tensor(b->tensor);
  if (!indexed_by(*a, with({i, k}))) {
    throw CompileError("contraction '" + t.name() + "' reads its first operand as " + te::to_string(mul->a) +
                       ": expected " + a->tensor->name + "[batch.., i, " + k->name + "]");
  }
  if (indexed_by(*b, with({j, k}))) {
    c.b_k_major = true;
  } else if (indexed_by(*b, with({k, j}))) {
    c.b_k_major = false;
  } else {
    throw CompileError("contraction '" + t.name() + "' reads its second operand as " + te::to_string(mul->b) +
                       ": expected " + b->tensor->name + "[batch.., i1, " + k->name + "] or [batch.., " +
                       k->name + ", i1]");
  }
  if (t.dtype() != te::DType::f32) {
    throw CompileError("contraction '" + t.name() + "' accumulates in " +
                       std::string(te::dtype_name(t.dtype())) + ": the tensor cores accumulate in f32");
  }
  c.batch.assign(t.shape().begin(), t.shape().end() - 2);
  c.m = t.shape()[rank - 2];
  c.n = t.shape()[rank - 1];
  c.k = reduce->axes[0].extent();
  return c;
}

void require_tensor_core_operand(const Contraction& c, const Tensor& operand) {
  if (operand.dtype() != te::DType::bf16 && operand.dtype() != te::DType::f16) {
    throw CompileError("contraction '" + c.tensor.name() + "' operand '" + operand.name() + "' is " +
                       std::string(te::dtype_name(operand.dtype())) +
                       ": the tensor-core path takes bf16 or f16");
  }
}

// How a value between the contractions depends on the running maxima of the blocked loop.
struct Shift {
  enum class Kind : std::uint8_t {
    kIndependent,  // unchanged when a running max grows
    kShifted,      // multiplied by exp(old - new) when `max` grows from old to new
    kMax,          // the running max itself (only valid as x - max inside exp)
    kFinal,        // a sum or a value of sums: known only after the last block
  };
  Kind kind = Kind::kIndependent;
  const te::TensorNode* max = nullptr;          // kShifted, kMax
  const te::TensorNode* final_value = nullptr;  // kFinal
};

class OnlineDeriver {
 public:
  explicit OnlineDeriver(B2BPlan& plan) : plan_(plan) {}

  void add_statistic(const Tensor& t) {
    const auto* reduce = t->body.as<te::ReduceNode>();
    const te::ReadNode* read = reduce == nullptr ? nullptr : read_through_cast(reduce->body);
    if (read == nullptr || reduce->axes.size() != 1 || reduce->axes[0].extent() != plan_.first.n) {
      throw CompileError(
          "row value '" + t.name() + "' between the contractions must reduce one tile over the " +
          std::to_string(plan_.first.n) + " chained columns, read as tile[.., i, j]: write its " +
          "summand as its own compute");
    }
    OnlineStatistic statistic;
    statistic.tensor = t;
    statistic.source = Tensor(read->tensor);
    const Shift source = shift_of_tensor(statistic.source);
    if (reduce->op == te::ReduceOp::kMax) {
      if (source.kind != Shift::Kind::kIndependent) {
        fail(t, "is a max of a tile that depends on another statistic");
      }
      statistic.kind = OnlineStatistic::Kind::kRunningMax;
      shifts_[t.get()] = Shift{Shift::Kind::kMax, t.get(), nullptr};
    } else if (reduce->op == te::ReduceOp::kSum) {
      if (source.kind == Shift::Kind::kIndependent) {
        statistic.kind = OnlineStatistic::Kind::kPlainSum;
      } else if (source.kind == Shift::Kind::kShifted) {
        statistic.kind = OnlineStatistic::Kind::kRescaledSum;
        statistic.shift = Tensor(node_of(source.max));
      } else {
        fail(t, "sums a tile that depends on a sum over the same columns: no online form");
      }
      shifts_[t.get()] = Shift{Shift::Kind::kFinal, nullptr, t.get()};
    } else {
      fail(t, "is a min reduction over the chained columns: only max and sum have an online form here");
    }
    plan_.statistics.push_back(statistic);
  }

  void add_row_value(const Tensor& t) {
    const Shift s = shift_of(t->body);
    if (s.kind != Shift::Kind::kFinal && s.kind != Shift::Kind::kIndependent) {
      fail(t, "combines a running max into a row value: no online form");
    }
    shifts_[t.get()] = Shift{Shift::Kind::kFinal, nullptr, t.get()};
    plan_.row_values.push_back(t);
  }

  void add_tile(const Tensor& t) {
    shifts_[t.get()] = shift_of(t->body);
    plan_.tiles.push_back(t);
  }

  // Splits GEMM2's operand into numerator (shifted or not) and a final row factor.
  void derive_operand(const Tensor& operand) {
    Tensor current = operand;
    plan_.rounded_to = operand.dtype();
    for (;;) {
      Expr body = current->body;
      while (const auto* cast = body.as<te::CastNode>()) body = cast->value;  // rounding: see rounded_to
      if (const auto* read = body.as<te::ReadNode>();
          read != nullptr && !Tensor(read->tensor).is_placeholder()) {
        current = Tensor(read->tensor);
        continue;
      }
      const auto* binary = body.as<te::BinaryNode>();
      if (binary != nullptr && (binary->op == te::BinaryOp::kDiv || binary->op == te::BinaryOp::kMul)) {
        const Shift right = shift_of(binary->b);
        const te::ReadNode* left = read_through_cast(binary->a);
        if (right.kind == Shift::Kind::kFinal && left != nullptr) {
          const Tensor factor(node_of(right.final_value));
          (binary->op == te::BinaryOp::kDiv ? plan_.divisor : plan_.multiplier) = factor;
          const auto* factor_read = read_through_cast(binary->b);
          if (factor_read == nullptr || factor_read->tensor.get() != right.final_value) {
            fail(current, "divides by an expression of row sums: read one row value instead");
          }
          current = Tensor(left->tensor);
        }
      }
      break;
    }
    const Shift numerator = shift_of_tensor(current);
    if (numerator.kind == Shift::Kind::kFinal || numerator.kind == Shift::Kind::kMax) {
      fail(current, "feeds the second contraction with values known only after the last block");
    }
    plan_.numerator = current;
    if (numerator.kind == Shift::Kind::kShifted) {
      plan_.shift = Tensor(node_of(numerator.max));
    }
    for (const OnlineStatistic& s : plan_.statistics) {
      if (s.kind == OnlineStatistic::Kind::kRescaledSum && !(plan_.shift && s.shift->same_as(*plan_.shift))) {
        fail(s.tensor,
             "is rescaled by a running max other than the one the second contraction's operand uses");
      }
    }
  }

 private:
  std::shared_ptr<const te::TensorNode> node_of(const te::TensorNode* node) const {
    for (const Tensor& t : plan_.program.tensors()) {
      if (t.get() == node) return t.node();
    }
    throw InternalError("tensor is not part of the program");
  }

  [[noreturn]] void fail(const Tensor& t, const std::string& why) const {
    throw CompileError("'" + t.name() + "' " + why);
  }

  Shift shift_of_tensor(const Tensor& t) const {
    if (t.is_placeholder() || t.same_as(plan_.first.tensor)) return {};
    const auto it = shifts_.find(t.get());
    if (it == shifts_.end()) throw CompileError("'" + t.name() + "' is read before it is planned");
    return it->second;
  }

  // The rules: exp(x - max) is shifted by max; products and quotients with independent factors, sums of
  // values shifted by the same max, selects with an independent condition and casts keep the shift.
  Shift shift_of(const Expr& e) const {
    using K = Shift::Kind;
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
      case ExprKind::kVar:
        return {};
      case ExprKind::kRead:
        return shift_of_tensor(Tensor(e.as<te::ReadNode>()->tensor));
      case ExprKind::kCast:
        return shift_of(e.as<te::CastNode>()->value);
      case ExprKind::kUnary: {
        const auto* unary = e.as<te::UnaryNode>();
        if (unary->op == te::UnaryOp::kExp) {
          const auto* sub = unary->value.as<te::BinaryNode>();
          if (sub != nullptr && sub->op == te::BinaryOp::kSub) {
            const Shift x = shift_of(sub->a), m = shift_of(sub->b);
            if (x.kind == K::kIndependent && m.kind == K::kMax) return {K::kShifted, m.max, nullptr};
          }
        }
        const Shift inner = shift_of(unary->value);
        if (inner.kind == K::kIndependent || inner.kind == K::kFinal) return inner;
        throw CompileError("'" + te::to_string(e) + "' applies " + std::string(te::unary_op_name(unary->op)) +
                           " to a value that depends on a running max: no online form");
      }
      case ExprKind::kBinary: {
        const auto* binary = e.as<te::BinaryNode>();
        const Shift a = shift_of(binary->a), b = shift_of(binary->b);
        if (a.kind == K::kIndependent && b.kind == K::kIndependent) return {};
        // A value of the final sums (softmax's 1 / sum, or p = e / sum) is known only after the last block:
        // the operand derivation splits it off; anywhere else it is rejected.
        if (a.kind == K::kFinal && b.kind != K::kMax) return a;
        if (b.kind == K::kFinal && a.kind != K::kMax) return b;
        const bool scales = binary->op == te::BinaryOp::kMul || binary->op == te::BinaryOp::kDiv;
        if (scales && a.kind == K::kShifted && b.kind == K::kIndependent) return a;
        if (binary->op == te::BinaryOp::kMul && b.kind == K::kShifted && a.kind == K::kIndependent) return b;
        const bool linear = binary->op == te::BinaryOp::kAdd || binary->op == te::BinaryOp::kSub;
        if (linear && a.kind == K::kShifted && b.kind == K::kShifted && a.max == b.max) return a;
        throw CompileError(
            "'" + te::to_string(e) + "' combines a running max or a shifted value in a way " +
            "that has no online form (only exp(x - max), and products, quotients and sums of " +
            "values shifted by the same max)");
      }
      case ExprKind::kPow: {
        const Shift base = shift_of(e.as<te::PowNode>()->base);
        if (base.kind == K::kIndependent || base.kind == K::kFinal) return base;
        throw CompileError(
            "'" + te::to_string(e) + "' raises a value that depends on a running max to a power: " +
            "its rescale would be exp(power x shift), which the blocked kernel does not carry");
      }
      case ExprKind::kSelect: {
        const auto* select = e.as<te::SelectNode>();
        if (shift_of(select->cond).kind != K::kIndependent) {
          throw CompileError("'" + te::to_string(e) + "' selects on a value that depends on a statistic");
        }
        const Shift a = shift_of(select->if_true), b = shift_of(select->if_false);
        auto is_zero = [](const Expr& x) {
          const auto* f = x.as<te::FloatImmNode>();
          return f != nullptr && f->value == 0;
        };
        if (a.kind == K::kIndependent && b.kind == K::kIndependent) return {};
        if (a.kind == K::kShifted && (b.kind == K::kShifted ? b.max == a.max : is_zero(select->if_false)))
          return a;
        if (b.kind == K::kShifted && is_zero(select->if_true)) return b;
        throw CompileError("'" + te::to_string(e) + "' selects between values with different shifts");
      }
      case ExprKind::kCompare: {
        const auto* compare = e.as<te::CompareNode>();
        if (shift_of(compare->a).kind == K::kIndependent && shift_of(compare->b).kind == K::kIndependent)
          return {};
        throw CompileError("'" + te::to_string(e) + "' compares a value that depends on a statistic");
      }
      default:
        throw CompileError("'" + te::to_string(e) + "' cannot be computed one block of columns at a time");
    }
  }

  B2BPlan& plan_;
  std::map<const te::TensorNode*, Shift> shifts_;
};

bool contains_reduction(const Expr& e) {
  if (e.kind() == ExprKind::kReduce) return true;
  bool found = false;
  te::for_each_child(e, [&](const Expr& child) { found = found || contains_reduction(child); });
  return found;
}

// Every compute `t` reads, directly.
std::set<const te::TensorNode*> direct_reads(const Tensor& t) {
  std::set<const te::TensorNode*> out;
  for (const Tensor& r : te::Program::reads_of(t)) out.insert(r.get());
  return out;
}

}  // namespace

std::vector<const OnlineStatistic*> B2BPlan::running_maxima() const {
  std::vector<const OnlineStatistic*> maxima;
  for (const OnlineStatistic& s : statistics) {
    if (s.kind == OnlineStatistic::Kind::kRunningMax) maxima.push_back(&s);
  }
  return maxima;
}

B2BPlan plan_b2b(const te::Program& program) {
  std::vector<Contraction> contractions;
  for (const Tensor& t : program.tensors()) {
    if (auto c = match_contraction(t)) contractions.push_back(*c);
  }
  if (contractions.size() < 2) {
    throw CompileError("the program has " + std::to_string(contractions.size()) +
                       " contraction(s): back-to-back fusion needs two (one is plan_fusion's case)");
  }
  if (contractions.size() > 2) {
    throw CompileError("the program has " + std::to_string(contractions.size()) +
                       " contractions: back-to-back fusion chains exactly two");
  }
  B2BPlan plan{program, contractions[0], contractions[1], {}, {}, {}, {}, {}, {}, {}, te::DType::bf16, {}};
  const Contraction &first = plan.first, &second = plan.second;

  // Which tensors depend on GEMM1, in program (topological) order.
  std::set<const te::TensorNode*> after_first = {first.tensor.get()};
  for (const Tensor& t : program.tensors()) {
    if (t.is_placeholder()) continue;
    for (const te::TensorNode* r : direct_reads(t)) {
      if (after_first.count(r)) after_first.insert(t.get());
    }
  }
  if (after_first.count(second.b.get())) {
    throw CompileError("contraction '" + second.tensor.name() + "' reads '" + second.b.name() +
                       "', computed from '" + first.tensor.name() +
                       "', as its second operand: back-to-back " +
                       "fusion chains GEMM1's output into GEMM2's first operand");
  }
  if (!after_first.count(second.a.get())) {
    throw CompileError("contraction '" + second.tensor.name() + "' does not consume '" + first.tensor.name() +
                       "': the two contractions are independent");
  }
  for (const Tensor& operand : {first.a, first.b, second.b}) {
    if (!operand.is_placeholder()) {
      throw CompileError("contraction operand '" + operand.name() +
                         "' is computed: only GEMM2's first operand " + "may be computed (from GEMM1)");
    }
  }
  require_tensor_core_operand(first, first.a);
  require_tensor_core_operand(first, first.b);
  require_tensor_core_operand(second, second.b);
  require_tensor_core_operand(second, second.a);
  if (second.k != first.n || second.m != first.m || second.batch != first.batch) {
    throw CompileError("contraction '" + second.tensor.name() + "' does not chain '" + first.tensor.name() +
                       "': it contracts " + std::to_string(second.k) + " columns of " +
                       std::to_string(second.m) + " rows, GEMM1 gives " + std::to_string(first.n) + " of " +
                       std::to_string(first.m));
  }

  std::vector<std::int64_t> tile_shape = first.tensor.shape();
  std::vector<std::int64_t> row_shape(tile_shape.begin(), tile_shape.end() - 1);
  std::vector<std::int64_t> out_shape = second.tensor.shape();
  OnlineDeriver deriver(plan);
  bool past_second = false;
  for (const Tensor& t : program.tensors()) {
    if (t.is_placeholder() || t.same_as(first.tensor)) continue;
    if (t.same_as(second.tensor)) {
      past_second = true;
      continue;
    }
    if (!after_first.count(t.get())) {
      throw CompileError("'" + t.name() + "' does not depend on '" + first.tensor.name() +
                         "': a back-to-back kernel computes nothing beside the chain");
    }
    if (past_second) {
      if (t.shape() != out_shape || direct_reads(t) != std::set<const te::TensorNode*>{second.tensor.get()}) {
        throw CompileError("'" + t.name() + "' after '" + second.tensor.name() +
                           "' must be elementwise on it, " + "shape " + te::shape_to_string(out_shape));
      }
      plan.epilogue.push_back(t);
    } else if (t.shape() == tile_shape) {
      deriver.add_tile(t);
    } else if (t.shape() == row_shape) {
      if (t->body.kind() == ExprKind::kReduce) {
        deriver.add_statistic(t);
      } else if (contains_reduction(t->body)) {
        throw CompileError(
            "'" + t.name() + "' wraps a reduction over the chained columns in arithmetic: " +
            "write the reduction as its own [.., M] compute, so that its online form can be derived");
      } else {
        deriver.add_row_value(t);
      }
    } else {
      throw CompileError("'" + t.name() + "' between the contractions has shape " +
                         te::shape_to_string(t.shape()) + ": expected a tile " +
                         te::shape_to_string(tile_shape) + " or a row value " +
                         te::shape_to_string(row_shape));
    }
  }
  for (const Tensor& out : program.outputs()) {
    if (!past_second ||
        !(out.same_as(second.tensor) || std::any_of(plan.epilogue.begin(), plan.epilogue.end(),
                                                    [&](const Tensor& e) { return e.same_as(out); }))) {
      throw CompileError("output '" + out.name() + "' is computed between the contractions: a back-to-back " +
                         "kernel keeps those on chip");
    }
  }
  deriver.derive_operand(second.a);
  return plan;
}

SplitB2B split_b2b(const B2BPlan& plan) {
  const te::Tensor& operand = plan.second.a;
  return SplitB2B{te::extract(plan.program, {}, {operand}),
                  te::extract(plan.program, {operand}, plan.program.outputs())};
}

std::vector<te::Program> kernel_programs(const te::Program& program) {
  try {
    plan_fusion(program);
    return {program};
  } catch (const CompileError& fused) {
    std::optional<SplitB2B> split;
    try {
      split = split_b2b(plan_b2b(program));
    } catch (const CompileError&) {
      throw fused;  // not back-to-back either: the single-kernel planner's reason is the one to give
    }
    try {
      plan_fusion(split->first);
      plan_fusion(split->second);
    } catch (const CompileError& part) {
      const std::string why = fused.what(), part_why = part.what();
      throw CompileError(why +
                         "; as two kernels: " + (part_why == why ? "the same, in its first part" : part_why));
    }
    return {split->first, split->second};
  }
}

std::string to_string(const B2BPlan& plan) {
  std::ostringstream out;
  auto contraction = [&](const char* label, const Contraction& c) {
    out << label << " " << c.tensor.name() << " = " << c.a.name() << " x " << c.b.name()
        << (c.b_k_major ? "^T" : "") << "  batch " << te::shape_to_string(c.batch) << " M=" << c.m
        << " N=" << c.n << " K=" << c.k << "\n";
  };
  contraction("gemm1", plan.first);
  contraction("gemm2", plan.second);
  out << "tiles between:";
  for (const Tensor& t : plan.tiles) out << " " << t.name();
  out << "\nstatistics:";
  for (const OnlineStatistic& s : plan.statistics) {
    out << " " << s.tensor.name() << "("
        << (s.kind == OnlineStatistic::Kind::kRunningMax ? "running max"
            : s.kind == OnlineStatistic::Kind::kPlainSum ? "sum"
                                                         : "sum rescaled by " + s.shift->name())
        << " of " << s.source.name() << ")";
  }
  out << "\ngemm2 accumulates " << plan.numerator->name() << " as " << te::dtype_name(plan.rounded_to);
  if (plan.shift) out << ", rescaled when " << plan.shift->name() << " grows";
  if (plan.divisor) out << ", divided by " << plan.divisor->name() << " at the end";
  if (plan.multiplier) out << ", multiplied by " << plan.multiplier->name() << " at the end";
  out << "\nepilogue:";
  for (const Tensor& t : plan.epilogue) out << " " << t.name();
  out << "\n";
  return out.str();
}

}  // namespace comfuse::schedule
