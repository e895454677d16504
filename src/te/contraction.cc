// Recognises (batched) matrix products among computes and evaluates them with Eigen, split over threads.
#include "te/contraction.h"

#include <Eigen/Core>

#include "support/error.h"
#include "support/parallel.h"

namespace comfuse::te::detail {
namespace {

// Rows of the output per work item. Eigen's blocking depends on the product's shape, so a fixed block makes
// every element's summation order independent of how many threads share the blocks.
constexpr std::int64_t kRowBlock = 64;

// The read under a factor `X(...)` or `f32(X(...))`, when X is a float tensor; null otherwise.
const ReadNode* factor_read(const Expr& e) {
  const Expr* inner = &e;
  if (const auto* cast = e.as<CastNode>()) {
    if (cast->dtype != DType::f32) return nullptr;
    inner = &cast->value;
  }
  const auto* read = inner->as<ReadNode>();
  if (read == nullptr || !is_float(read->tensor->dtype)) return nullptr;
  if (inner == &e && read->tensor->dtype != DType::f32) return nullptr;
  return read;
}

// The operand of `read`: each index a distinct output axis or the reduce axis `k`; nothing otherwise.
std::optional<ContractionOperand> operand_of(const ReadNode& read, const TensorNode& out, const VarNode* k) {
  ContractionOperand operand;
  operand.tensor = read.tensor.get();
  for (const Expr& index : read.indices) {
    const auto* var = index.as<VarNode>();
    if (var == nullptr) return std::nullopt;
    int axis = -2;
    if (var == k) axis = -1;
    for (std::size_t d = 0; d < out.axes.size(); ++d) {
      if (out.axes[d].get() == var) axis = static_cast<int>(d);
    }
    if (axis == -2) return std::nullopt;
    for (int seen : operand.axis_of_dim) {
      if (seen == axis) return std::nullopt;
    }
    operand.axis_of_dim.push_back(axis);
  }
  return operand;
}

bool reads_axis(const ContractionOperand& operand, int axis) {
  for (int a : operand.axis_of_dim) {
    if (a == axis) return true;
  }
  return false;
}

// Strides of an operand's dimensions, grouped by what they read.
struct OperandLayout {
  std::vector<std::int64_t> batch_stride;  // per output batch axis (0 when not read)
  std::int64_t outer_stride = 0;           // i for A, j for B
  std::int64_t k_stride = 0;
};

OperandLayout layout_of(const ContractionOperand& operand, int outer_axis, std::size_t batch_rank) {
  OperandLayout layout;
  layout.batch_stride.assign(batch_rank, 0);
  const auto& shape = operand.tensor->shape;
  std::int64_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    const int axis = operand.axis_of_dim[d];
    if (axis == -1) {
      layout.k_stride = stride;
    } else if (axis == outer_axis) {
      layout.outer_stride = stride;
    } else {
      layout.batch_stride[static_cast<std::size_t>(axis)] = stride;
    }
    stride *= shape[d];
  }
  return layout;
}

template <typename Scalar>
void run(const Tensor& tensor, const Contraction& c, const double* a_values, const double* b_values,
         int threads, double* out) {
  using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto& shape = tensor.shape();
  const std::size_t batch_rank = shape.size() - 2;
  const std::int64_t m = shape[batch_rank], n = shape[batch_rank + 1], k = c.k;
  std::int64_t batches = 1;
  for (std::size_t d = 0; d < batch_rank; ++d) batches *= shape[d];
  const OperandLayout la = layout_of(c.a, static_cast<int>(batch_rank), batch_rank);
  const OperandLayout lb = layout_of(c.b, static_cast<int>(batch_rank + 1), batch_rank);
  const std::int64_t row_blocks = (m + kRowBlock - 1) / kRowBlock;
  if (batches * m * n * k < (std::int64_t{1} << 18)) threads = 1;  // not worth starting threads

  support::parallel_for(batches * row_blocks, threads, [&](std::int64_t begin, std::int64_t end) {
    Matrix a, b, product;
    std::int64_t loaded_batch = -1;
    for (std::int64_t item = begin; item < end; ++item) {
      const std::int64_t batch = item / row_blocks;
      const std::int64_t row0 = (item % row_blocks) * kRowBlock, rows = std::min(kRowBlock, m - row0);
      std::int64_t a_base = 0, b_base = 0;
      for (std::size_t d = batch_rank, rest = static_cast<std::size_t>(batch); d-- > 0;) {
        const auto index = static_cast<std::int64_t>(rest % static_cast<std::size_t>(shape[d]));
        rest /= static_cast<std::size_t>(shape[d]);
        a_base += index * la.batch_stride[d];
        b_base += index * lb.batch_stride[d];
      }
      if (batch != loaded_batch) {
        b.resize(k, n);
        for (std::int64_t kk = 0; kk < k; ++kk) {
          for (std::int64_t j = 0; j < n; ++j) {
            b(kk, j) = static_cast<Scalar>(b_values[b_base + kk * lb.k_stride + j * lb.outer_stride]);
          }
        }
        loaded_batch = batch;
      }
      a.resize(rows, k);
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t kk = 0; kk < k; ++kk) {
          a(i, kk) = static_cast<Scalar>(a_values[a_base + (row0 + i) * la.outer_stride + kk * la.k_stride]);
        }
      }
      product.noalias() = a * b;
      double* dst = out + batch * m * n + row0 * n;
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          dst[i * n + j] = static_cast<double>(static_cast<float>(product(i, j)));
        }
      }
    }
  });
}

}  // namespace

std::optional<Contraction> match_contraction(const TensorNode& node, const Expr& e) {
  if (node.kind != TensorKind::kCompute || node.axes.size() < 2) return std::nullopt;
  const auto* reduce = e.as<ReduceNode>();
  if (reduce == nullptr || reduce->dtype != DType::f32 || reduce->op != ReduceOp::kSum ||
      reduce->axes.size() != 1) {
    return std::nullopt;
  }
  const auto* mul = reduce->body.as<BinaryNode>();
  if (mul == nullptr || mul->op != BinaryOp::kMul) return std::nullopt;
  const ReadNode* first = factor_read(mul->a);
  const ReadNode* second = factor_read(mul->b);
  if (first == nullptr || second == nullptr) return std::nullopt;
  const VarNode* k = reduce->axes[0].get();
  auto x = operand_of(*first, node, k), y = operand_of(*second, node, k);
  if (!x || !y) return std::nullopt;
  const int i_axis = static_cast<int>(node.axes.size()) - 2, j_axis = i_axis + 1;
  if (reads_axis(*x, j_axis)) std::swap(x, y);
  const bool a_ok = reads_axis(*x, i_axis) && reads_axis(*x, -1) && !reads_axis(*x, j_axis);
  const bool b_ok = reads_axis(*y, j_axis) && reads_axis(*y, -1) && !reads_axis(*y, i_axis);
  if (!a_ok || !b_ok) return std::nullopt;
  return Contraction{*x, *y, k->extent};
}

void evaluate_contraction(const Tensor& tensor, const Contraction& contraction, const ValuesOf& values_of,
                          const EvalSettings& settings, double* out) {
  const double* a = values_of(contraction.a.tensor);
  const double* b = values_of(contraction.b.tensor);
  if (settings.fp64) {
    run<double>(tensor, contraction, a, b, settings.threads, out);
  } else {
    run<float>(tensor, contraction, a, b, settings.threads, out);
  }
}

}  // namespace comfuse::te::detail
