// The random program generator's bounded mode keeps every value in range: checked by evaluating programs.
#include "te/random_program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "te/printer.h"

namespace comfuse::te {
namespace {

// A deliberately naive evaluator, enough to check value ranges: every element of every tensor, each op
// rounded to its dtype, reductions accumulated in the body's dtype. It records the first problem it meets:
// a NaN or infinity, an i32 division by zero or result beyond 32 bits, or a value outside the bounds.
class RangeChecker {
 public:
  explicit RangeChecker(std::uint64_t seed) : rng_(seed) {}

  void run(const Program& program) {
    for (const Tensor& t : program.tensors()) {
      std::vector<double>& data = values_[t.get()];
      data.resize(static_cast<std::size_t>(elements(t.shape())));
      if (t.is_placeholder()) {
        for (double& v : data) {
          v = t.dtype() == DType::i32 ? rng_.between(-8, 8) : round_to_dtype(rng_.unit() * 2 - 1, t.dtype());
        }
        continue;
      }
      std::vector<std::int64_t> index(t.shape().size(), 0);
      for (double& v : data) {
        for (std::size_t d = 0; d < index.size(); ++d) env_[t->axes[d].get()] = index[d];
        v = eval(t->body);
        check(v, t->dtype, t.name());
        for (std::size_t d = index.size(); d-- > 0;) {
          if (++index[d] < t.shape()[d]) break;
          index[d] = 0;
        }
      }
    }
  }

  const std::string& problem() const { return problem_; }

 private:
  static std::int64_t elements(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (std::int64_t extent : shape) n *= extent;
    return n;
  }

  void check(double v, DType dtype, const std::string& where) {
    if (!problem_.empty()) return;
    const double bound = dtype == DType::i32 ? 8 : 1;
    if (!std::isfinite(v) || std::abs(v) > bound) problem_ = where + " has value " + format_double(v);
  }

  double eval(const Expr& e) {
    const DType dtype = e.dtype();
    const auto rounded = [&](double v) {
      return dtype == DType::i32 ? integer(v) : round_to_dtype(v, dtype);
    };
    switch (e.kind()) {
      case ExprKind::kIntImm:
        return static_cast<double>(e.as<IntImmNode>()->value);
      case ExprKind::kFloatImm:
        return e.as<FloatImmNode>()->value;
      case ExprKind::kVar:
        return static_cast<double>(env_.at(e.as<VarNode>()));
      case ExprKind::kBinary: {
        const auto* n = e.as<BinaryNode>();
        const double a = eval(n->a), b = eval(n->b);
        switch (n->op) {
          case BinaryOp::kAdd:
            return rounded(a + b);
          case BinaryOp::kSub:
            return rounded(a - b);
          case BinaryOp::kMul:
            return rounded(a * b);
          case BinaryOp::kDiv:
            if (dtype == DType::i32 && b == 0) {
              fail("i32 division by zero in " + to_string(e));
              return 0;
            }
            return rounded(dtype == DType::i32 ? std::trunc(a / b) : a / b);
          case BinaryOp::kMin:
            return std::min(a, b);
          case BinaryOp::kMax:
            return std::max(a, b);
        }
        return 0;
      }
      case ExprKind::kCompare: {
        const auto* n = e.as<CompareNode>();
        const double a = eval(n->a), b = eval(n->b);
        switch (n->op) {
          case CompareOp::kLt:
            return a < b;
          case CompareOp::kLe:
            return a <= b;
          case CompareOp::kGt:
            return a > b;
          case CompareOp::kGe:
            return a >= b;
          case CompareOp::kEq:
            return a == b;
          case CompareOp::kNe:
            return a != b;
        }
        return 0;
      }
      case ExprKind::kSelect: {
        const auto* n = e.as<SelectNode>();
        return eval(n->cond) != 0 ? eval(n->if_true) : eval(n->if_false);
      }
      case ExprKind::kCast:
        return rounded(eval(e.as<CastNode>()->value));
      case ExprKind::kUnary: {
        const auto* n = e.as<UnaryNode>();
        const double x = eval(n->value);
        switch (n->op) {
          case UnaryOp::kNeg:
            return -x;
          case UnaryOp::kAbs:
            return std::abs(x);
          case UnaryOp::kExp:
            return rounded(std::exp(x));
          case UnaryOp::kLog:
            return rounded(std::log(x));
          case UnaryOp::kTanh:
            return rounded(std::tanh(x));
          case UnaryOp::kErf:
            return rounded(std::erf(x));
          case UnaryOp::kSqrt:
            return rounded(std::sqrt(x));
          case UnaryOp::kRsqrt:
            return rounded(1 / std::sqrt(x));
          case UnaryOp::kSigmoid:
            return rounded(1 / (1 + std::exp(-x)));
        }
        return 0;
      }
      case ExprKind::kPow: {
        const auto* n = e.as<PowNode>();
        return rounded(std::pow(eval(n->base), n->exponent));
      }
      case ExprKind::kRead: {
        const auto* n = e.as<ReadNode>();
        std::int64_t flat = 0;
        for (std::size_t d = 0; d < n->indices.size(); ++d) {
          const auto i = static_cast<std::int64_t>(eval(n->indices[d]));
          if (i < 0 || i >= n->tensor->shape[d]) {
            fail("index out of range in " + to_string(e));
            return 0;
          }
          flat = flat * n->tensor->shape[d] + i;
        }
        return values_.at(n->tensor.get())[static_cast<std::size_t>(flat)];
      }
      case ExprKind::kReduce: {
        const auto* n = e.as<ReduceNode>();
        std::vector<std::int64_t> extents;
        for (const Var& axis : n->axes) extents.push_back(axis.extent());
        std::vector<std::int64_t> index(extents.size(), 0);
        double acc = n->op == ReduceOp::kSum ? 0 : NAN;
        for (std::int64_t step = 0; step < elements(extents); ++step) {
          for (std::size_t a = 0; a < index.size(); ++a) env_[n->axes[a].get()] = index[a];
          const double v = eval(n->body);
          switch (n->op) {
            case ReduceOp::kSum:
              acc = rounded(acc + v);
              break;
            case ReduceOp::kMax:
              acc = step == 0 ? v : std::max(acc, v);
              break;
            case ReduceOp::kMin:
              acc = step == 0 ? v : std::min(acc, v);
              break;
          }
          for (std::size_t a = index.size(); a-- > 0;) {
            if (++index[a] < extents[a]) break;
            index[a] = 0;
          }
        }
        return acc;
      }
    }
    return 0;
  }

  double integer(double v) {
    if (std::abs(v) > 2147483647.0) fail("i32 overflow: " + format_double(v));
    return v;
  }

  void fail(const std::string& message) {
    if (problem_.empty()) problem_ = message;
  }

  random_program_detail::Rng rng_;
  std::map<const TensorNode*, std::vector<double>> values_;
  std::map<const VarNode*, std::int64_t> env_;
  std::string problem_;
};

TEST(RandomProgram, BoundedProgramsStayInRange) {
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    const Program p = random_program(seed, {.max_depth = 5, .bounded = true});
    RangeChecker checker(seed);
    checker.run(p);
    EXPECT_EQ(checker.problem(), "") << "seed " << seed << "\n" << to_string(p);
  }
}

TEST(RandomProgram, UnboundedProgramsDoLeaveTheRange) {
  // The checker can fail: without bounds, some programs overflow, divide by zero or make NaN.
  int out_of_range = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    RangeChecker checker(seed);
    checker.run(random_program(seed));
    out_of_range += !checker.problem().empty();
  }
  EXPECT_GT(out_of_range, 20);
}

}  // namespace
}  // namespace comfuse::te
