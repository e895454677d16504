// The general evaluator: runs a compiled body (compiled_body.h) on chunks of kLanes consecutive output
// elements, each instruction over all lanes of a chunk at once, the chunks split over threads.
#include "te/body_evaluator.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/error.h"
#include "te/compiled_body.h"
#include "support/parallel.h"
#include "te/printer.h"

namespace comfuse::te::detail {
namespace {

// Output elements evaluated together: each instruction runs over a chunk's lanes in one tight loop, which
// amortises its dispatch. Fixed, so that the chunks never depend on the thread count.
constexpr int kLanes = 64;

double wrap_i32(std::int64_t v) {
  return static_cast<double>(
      static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v))));
}

double saturate_i32(double v) {
  if (std::isnan(v)) return 0.0;
  const double t = std::trunc(v);
  return std::min(std::max(t, -2147483648.0), 2147483647.0);
}

double nan_min(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  return y < x ? y : x;
}

double nan_max(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  return y > x ? y : x;
}

double ipow(std::int64_t base, int exponent) {
  std::uint32_t result = 1, b = static_cast<std::uint32_t>(static_cast<std::uint64_t>(base));
  for (unsigned e = static_cast<unsigned>(exponent); e != 0; e >>= 1) {
    if (e & 1u) result *= b;
    b *= b;
  }
  return static_cast<double>(static_cast<std::int32_t>(result));
}

// Runs a compiled body on chunks of elements; one per thread, owning its registers.
class Executor {
 public:
  Executor(const CompiledBody& body, const TensorNode& tensor, const std::vector<const double*>& data,
           bool fp64, double* out)
      : body_(body), tensor_(tensor), data_(data), fp64_(fp64), out_(out), rank_(tensor.shape.size()) {
    regs_.assign(static_cast<std::size_t>(body.num_regs) * kLanes, 0.0);
    for (auto [r, value] : body.constants) {
      for (int l = 0; l < kLanes; ++l) reg(r)[l] = value;
    }
    bases_.assign(body.reads.size() * kLanes, 0);
    scalar_.assign(body.reads.size(), 0);
    axis_vals_.assign(rank_ * kLanes, 0);
    iacc_.assign(kLanes, 0);
  }

  // Evaluates elements [start, start + n). On an error, re-evaluates them one by one so that the error
  // reported is the one at the lowest failing element, whatever the chunking.
  void run_chunk_checked(std::int64_t start, int n) {
    try {
      run_chunk(start, n);
    } catch (const CompileError&) {
      if (n == 1) throw;
      for (int l = 0; l < n; ++l) run_chunk(start + l, 1);
      throw;
    }
  }

 private:
  double* reg(int r) { return regs_.data() + static_cast<std::size_t>(r) * kLanes; }

  void run_chunk(std::int64_t start, int n) {
    std::vector<std::int64_t>& index = first_index_;
    index.resize(rank_);
    for (std::size_t d = rank_, rest = static_cast<std::size_t>(start); d-- > 0;) {
      const auto extent = static_cast<std::size_t>(tensor_.shape[d]);
      index[d] = static_cast<std::int64_t>(rest % extent);
      rest /= extent;
    }
    for (int l = 0; l < n; ++l) {
      for (std::size_t d = 0; d < rank_; ++d) axis_vals_[d * kLanes + l] = index[d];
      for (std::size_t d = rank_; d-- > 0;) {
        if (++index[d] < tensor_.shape[d]) break;
        index[d] = 0;
      }
    }
    for (std::size_t d = 0; d < rank_; ++d) {
      if (body_.axis_regs[d] < 0) continue;
      double* r = reg(body_.axis_regs[d]);
      for (int l = 0; l < n; ++l) r[l] = static_cast<double>(axis_vals_[d * kLanes + l]);
    }
    for (std::size_t r = 0; r < body_.reads.size(); ++r) {
      const ReadPlan& plan = body_.reads[r];
      std::int64_t* base = bases_.data() + r * kLanes;
      for (int l = 0; l < n; ++l) base[l] = plan.offset;
      for (std::size_t d = 0; d < rank_; ++d) {
        const std::int64_t c = plan.axis_coeffs[d];
        if (c == 0) continue;
        const std::int64_t* axis = axis_vals_.data() + d * kLanes;
        for (int l = 0; l < n; ++l) base[l] += c * axis[l];
      }
      scalar_[r] = 0;
    }
    for (const Instr& instr : body_.blocks[0].code) exec(instr, n);
    const double* result = reg(body_.result);
    for (int l = 0; l < n; ++l) out_[start + l] = result[l];
    // Stored elements are of the tensor's dtype in both modes.
    if (tensor_.dtype == DType::f32) round_lanes(out_ + start, n, DType::f32, /*fp64=*/false);
  }

  // Rounds values computed in double to `dtype` as the mode requires.
  static void round_lanes(double* v, int n, DType dtype, bool fp64) {
    switch (dtype) {
      case DType::f32:
        if (!fp64) {
          for (int l = 0; l < n; ++l) v[l] = static_cast<double>(static_cast<float>(v[l]));
        }
        return;
      case DType::f16:
      case DType::bf16:
        for (int l = 0; l < n; ++l) v[l] = round_to_dtype(v[l], dtype);
        return;
      case DType::i32:
      case DType::boolean:
        return;
    }
  }

  void exec(const Instr& in, int n) {
    double* d = reg(in.dst);
    switch (in.kind) {
      case InstrKind::kBinary:
        if (in.dtype == DType::i32) {
          binary_i32(in, d, n);
        } else {
          binary_float(in, d, n);
          round_lanes(d, n, in.dtype, fp64_);
        }
        return;
      case InstrKind::kCompare:
        compare(in, d, n);
        return;
      case InstrKind::kSelect: {
        const double *cond = reg(in.a), *t = reg(in.b), *f = reg(in.c);
        for (int l = 0; l < n; ++l) d[l] = cond[l] != 0.0 ? t[l] : f[l];
        return;
      }
      case InstrKind::kCast: {
        const double* a = reg(in.a);
        if (in.dtype == DType::i32) {
          for (int l = 0; l < n; ++l) d[l] = saturate_i32(a[l]);
        } else {
          for (int l = 0; l < n; ++l) d[l] = a[l];
          round_lanes(d, n, in.dtype, fp64_);
        }
        return;
      }
      case InstrKind::kUnary:
        unary(in, d, n);
        return;
      case InstrKind::kPow: {
        const double* a = reg(in.a);
        if (in.dtype == DType::i32) {
          for (int l = 0; l < n; ++l) d[l] = ipow(static_cast<std::int64_t>(a[l]), in.exponent);
        } else {
          for (int l = 0; l < n; ++l) d[l] = std::pow(a[l], static_cast<double>(in.exponent));
          round_lanes(d, n, in.dtype, fp64_);
        }
        return;
      }
      case InstrKind::kRead:
        read(in, d, n);
        return;
      case InstrKind::kReduce:
        reduce(in, d, n);
        return;
    }
  }

  void binary_float(const Instr& in, double* d, int n) {
    const double *a = reg(in.a), *b = reg(in.b);
    switch (static_cast<BinaryOp>(in.op)) {
      case BinaryOp::kAdd:
        for (int l = 0; l < n; ++l) d[l] = a[l] + b[l];
        return;
      case BinaryOp::kSub:
        for (int l = 0; l < n; ++l) d[l] = a[l] - b[l];
        return;
      case BinaryOp::kMul:
        for (int l = 0; l < n; ++l) d[l] = a[l] * b[l];
        return;
      case BinaryOp::kDiv:
        for (int l = 0; l < n; ++l) d[l] = a[l] / b[l];
        return;
      case BinaryOp::kMin:
        for (int l = 0; l < n; ++l) d[l] = nan_min(a[l], b[l]);
        return;
      case BinaryOp::kMax:
        for (int l = 0; l < n; ++l) d[l] = nan_max(a[l], b[l]);
        return;
    }
  }

  void binary_i32(const Instr& in, double* d, int n) {
    const double *a = reg(in.a), *b = reg(in.b);
    for (int l = 0; l < n; ++l) {
      const auto x = static_cast<std::int64_t>(a[l]), y = static_cast<std::int64_t>(b[l]);
      switch (static_cast<BinaryOp>(in.op)) {
        case BinaryOp::kAdd:
          d[l] = wrap_i32(x + y);
          break;
        case BinaryOp::kSub:
          d[l] = wrap_i32(x - y);
          break;
        case BinaryOp::kMul:
          d[l] = wrap_i32(x * y);
          break;
        case BinaryOp::kDiv:
          if (y == 0) fail(l, "i32 division by zero in " + to_string(in.expr));
          d[l] = wrap_i32(x / y);
          break;
        case BinaryOp::kMin:
          d[l] = static_cast<double>(std::min(x, y));
          break;
        case BinaryOp::kMax:
          d[l] = static_cast<double>(std::max(x, y));
          break;
      }
    }
  }

  void compare(const Instr& in, double* d, int n) {
    const double *a = reg(in.a), *b = reg(in.b);
    switch (static_cast<CompareOp>(in.op)) {
      case CompareOp::kLt:
        for (int l = 0; l < n; ++l) d[l] = a[l] < b[l] ? 1.0 : 0.0;
        return;
      case CompareOp::kLe:
        for (int l = 0; l < n; ++l) d[l] = a[l] <= b[l] ? 1.0 : 0.0;
        return;
      case CompareOp::kGt:
        for (int l = 0; l < n; ++l) d[l] = a[l] > b[l] ? 1.0 : 0.0;
        return;
      case CompareOp::kGe:
        for (int l = 0; l < n; ++l) d[l] = a[l] >= b[l] ? 1.0 : 0.0;
        return;
      case CompareOp::kEq:
        for (int l = 0; l < n; ++l) d[l] = a[l] == b[l] ? 1.0 : 0.0;
        return;
      case CompareOp::kNe:
        for (int l = 0; l < n; ++l) d[l] = a[l] != b[l] ? 1.0 : 0.0;
        return;
    }
  }

  void unary(const Instr& in, double* d, int n) {
    const double* a = reg(in.a);
    if (in.dtype == DType::i32) {
      const bool negate = static_cast<UnaryOp>(in.op) == UnaryOp::kNeg;  // else abs: the only other i32 op
      for (int l = 0; l < n; ++l) {
        const auto x = static_cast<std::int64_t>(a[l]);
        d[l] = wrap_i32(negate ? -x : std::abs(x));
      }
      return;
    }
    switch (static_cast<UnaryOp>(in.op)) {
      case UnaryOp::kNeg:
        for (int l = 0; l < n; ++l) d[l] = -a[l];
        break;
      case UnaryOp::kAbs:
        for (int l = 0; l < n; ++l) d[l] = std::fabs(a[l]);
        break;
      case UnaryOp::kExp:
        for (int l = 0; l < n; ++l) d[l] = std::exp(a[l]);
        break;
      case UnaryOp::kLog:
        for (int l = 0; l < n; ++l) d[l] = std::log(a[l]);
        break;
      case UnaryOp::kTanh:
        for (int l = 0; l < n; ++l) d[l] = std::tanh(a[l]);
        break;
      case UnaryOp::kErf:
        for (int l = 0; l < n; ++l) d[l] = std::erf(a[l]);
        break;
      case UnaryOp::kSqrt:
        for (int l = 0; l < n; ++l) d[l] = std::sqrt(a[l]);
        break;
      case UnaryOp::kRsqrt:
        for (int l = 0; l < n; ++l) d[l] = 1.0 / std::sqrt(a[l]);
        break;
      case UnaryOp::kSigmoid:
        for (int l = 0; l < n; ++l) d[l] = 1.0 / (1.0 + std::exp(-a[l]));
        break;
    }
    round_lanes(d, n, in.dtype, fp64_);
  }

  void read(const Instr& in, double* d, int n) {
    const auto r = static_cast<std::size_t>(in.read);
    const ReadPlan& plan = body_.reads[r];
    const double* data = data_[r];
    const std::int64_t* base = bases_.data() + r * kLanes;
    const std::int64_t scalar = scalar_[r];
    if (plan.dynamic.empty()) {
      for (int l = 0; l < n; ++l) d[l] = data[base[l] + scalar];
      return;
    }
    for (int l = 0; l < n; ++l) {
      std::int64_t offset = base[l] + scalar;
      for (const ReadPlan::Dynamic& dyn : plan.dynamic) {
        const double value = reg(dyn.reg)[l];
        if (!(value >= 0 && value < static_cast<double>(dyn.extent))) {
          fail(l, "index " + std::to_string(dyn.dim) + " of " + to_string(in.expr) + " is " +
                      std::to_string(static_cast<std::int64_t>(value)) + ", outside [0, " +
                      std::to_string(dyn.extent) + ")");
        }
        offset += static_cast<std::int64_t>(value) * dyn.stride;
      }
      d[l] = data[offset];
    }
  }

  void reduce(const Instr& in, double* acc, int n) {
    const Block& block = body_.blocks[static_cast<std::size_t>(in.block)];
    const auto op = static_cast<ReduceOp>(in.op);
    const bool integer = in.dtype == DType::i32;
    const double init = op == ReduceOp::kSum   ? 0.0
                        : op == ReduceOp::kMax ? (integer ? -2147483648.0 : -INFINITY)
                                               : (integer ? 2147483647.0 : INFINITY);
    for (int l = 0; l < n; ++l) acc[l] = init;
    for (int l = 0; l < n; ++l) iacc_[l] = 0;
    const bool float_sum_fp32 = op == ReduceOp::kSum && !integer && !fp64_;
    std::vector<std::int64_t>& rv = reduce_vals_;
    rv.assign(block.vars.size(), 0);
    reduce_block_ = &block;
    for (bool more = true; more;) {
      for (std::size_t p = 0; p < rv.size(); ++p) {
        if (block.var_regs[p] < 0) continue;
        double* r = reg(block.var_regs[p]);
        for (int l = 0; l < n; ++l) r[l] = static_cast<double>(rv[p]);
      }
      for (int r : block.reads) {
        std::int64_t s = 0;
        const std::vector<std::int64_t>& coeffs = body_.reads[static_cast<std::size_t>(r)].reduce_coeffs;
        for (std::size_t p = 0; p < rv.size(); ++p) s += coeffs[p] * rv[p];
        scalar_[static_cast<std::size_t>(r)] = s;
      }
      for (const Instr& instr : block.code) exec(instr, n);
      const double* v = reg(block.result);
      switch (op) {
        case ReduceOp::kSum:
          if (integer) {
            for (int l = 0; l < n; ++l) iacc_[l] += static_cast<std::int64_t>(v[l]);
          } else if (float_sum_fp32) {
            // Both operands are floats: the double sum rounded to float is the float sum.
            for (int l = 0; l < n; ++l) acc[l] = static_cast<double>(static_cast<float>(acc[l] + v[l]));
          } else {
            for (int l = 0; l < n; ++l) acc[l] += v[l];
          }
          break;
        case ReduceOp::kMax:
          for (int l = 0; l < n; ++l) acc[l] = nan_max(acc[l], v[l]);
          break;
        case ReduceOp::kMin:
          for (int l = 0; l < n; ++l) acc[l] = nan_min(acc[l], v[l]);
          break;
      }
      more = false;
      for (std::size_t p = rv.size(); p-- > 0;) {
        if (++rv[p] < block.extents[p]) {
          more = true;
          break;
        }
        rv[p] = 0;
      }
    }
    reduce_block_ = nullptr;
    if (integer && op == ReduceOp::kSum) {
      for (int l = 0; l < n; ++l) acc[l] = wrap_i32(iacc_[l]);
    } else {
      round_lanes(acc, n, in.dtype, fp64_);
    }
  }

  [[noreturn]] void fail(int lane, const std::string& message) const {
    std::string where = " at element [";
    for (std::size_t d = 0; d < rank_; ++d) {
      where += (d ? ", " : "") + std::to_string(axis_vals_[d * kLanes + static_cast<std::size_t>(lane)]);
    }
    where += "]";
    if (reduce_block_ != nullptr) {
      for (std::size_t p = 0; p < reduce_block_->vars.size(); ++p) {
        where +=
            (p ? ", " : " with ") + reduce_block_->vars[p]->name + " = " + std::to_string(reduce_vals_[p]);
      }
    }
    throw CompileError("compute '" + tensor_.name + "': " + message + where);
  }

  const CompiledBody& body_;
  const TensorNode& tensor_;
  const std::vector<const double*>& data_;
  const bool fp64_;
  double* const out_;
  const std::size_t rank_;
  std::vector<double> regs_;
  std::vector<std::int64_t> bases_;      // per read and lane: the offset from the compute's axes
  std::vector<std::int64_t> scalar_;     // per read: the offset from the current reduction step
  std::vector<std::int64_t> axis_vals_;  // per axis and lane: the element's index
  std::vector<std::int64_t> iacc_;       // per lane: i32 sums
  std::vector<std::int64_t> reduce_vals_;
  std::vector<std::int64_t> first_index_;  // scratch: the index of a chunk's first element
  const Block* reduce_block_ = nullptr;
};

}  // namespace

void evaluate_body(const Tensor& tensor, const ValuesOf& values_of, const Precomputed& precomputed,
                   const EvalSettings& settings, double* out) {
  const CompiledBody body = compile_body(*tensor.get(), precomputed);
  std::vector<const double*> data;
  for (const ReadPlan& plan : body.reads) {
    data.push_back(plan.precomputed != nullptr ? plan.precomputed : values_of(plan.tensor));
  }

  std::int64_t numel = 1;
  for (std::int64_t extent : tensor.shape()) numel *= extent;
  // Instructions executed per element, to keep tiny computes on one thread.
  std::int64_t work = static_cast<std::int64_t>(body.blocks[0].code.size()) + 1;
  for (std::size_t b = 1; b < body.blocks.size(); ++b) {
    std::int64_t steps = 1;
    for (std::int64_t extent : body.blocks[b].extents) steps *= extent;
    work += steps * static_cast<std::int64_t>(body.blocks[b].code.size() + 1);
  }
  const int threads = numel * work < (std::int64_t{1} << 16) ? 1 : settings.threads;
  const std::int64_t chunks = (numel + kLanes - 1) / kLanes;
  support::parallel_for(chunks, threads, [&](std::int64_t begin, std::int64_t end) {
    Executor executor(body, *tensor.get(), data, settings.fp64, out);
    for (std::int64_t c = begin; c < end; ++c) {
      const std::int64_t start = c * kLanes;
      executor.run_chunk_checked(start, static_cast<int>(std::min<std::int64_t>(kLanes, numel - start)));
    }
  });
}

}  // namespace comfuse::te::detail
