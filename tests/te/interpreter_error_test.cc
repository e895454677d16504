// User-facing errors of the reference interpreter and of host buffers: each check with its exact message.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "support/error.h"
#include "te/interpreter.h"

namespace comfuse::te {
namespace {

// The CompileError message `run` throws, or "" when it throws none.
std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const CompileError& error) {
    return error.what();
  }
  return "";
}

Program small_gemm() {
  auto x = placeholder({4, 8}, DType::bf16, "X");
  auto w = placeholder({8, 3}, DType::bf16, "W");
  auto k = reduce_axis(8, "k");
  auto y = compute(
      {4, 3}, [&](Var i, Var j) { return sum(cast(DType::f32, x(i, k)) * cast(DType::f32, w(k, j)), {k}); },
      "Y");
  return Program({x, w}, {y});
}

TEST(InterpreterError, WrongNumberOfInputs) {
  const Program program = small_gemm();
  const HostBuffer x(DType::bf16, {4, 8});
  EXPECT_EQ(error_of([&] { evaluate(program, {x}); }), "program takes 2 inputs (X, W) but was given 1");
  EXPECT_EQ(error_of([&] {
              evaluate_all(program, {x, x, x});
            }),
            "program takes 2 inputs (X, W) but was given 3");
}

TEST(InterpreterError, WrongDtypeOrShapeOfAnInput) {
  const Program program = small_gemm();
  const HostBuffer x(DType::bf16, {4, 8}), w(DType::bf16, {8, 3});
  EXPECT_EQ(error_of([&] {
              evaluate(program, {HostBuffer(DType::f32, {4, 8}), w});
            }),
            "input 'X': expected bf16[4, 8], got f32[4, 8]");
  EXPECT_EQ(error_of([&] {
              evaluate(program, {x, HostBuffer(DType::bf16, {3, 8})});
            }),
            "input 'W': expected bf16[8, 3], got bf16[3, 8]");
  EXPECT_EQ(error_of([&] {
              evaluate(program, {x, HostBuffer(DType::bf16, {8, 3, 1})});
            }),
            "input 'W': expected bf16[8, 3], got bf16[8, 3, 1]");
  EXPECT_EQ(error_of([&] { evaluate(program, {x, w}); }), "");
}

TEST(InterpreterError, IntegerDivisionByZeroNamesTheComputeAndElement) {
  auto a = placeholder({6}, DType::i32, "A");
  auto q = compute(
      {6}, [&](Var i) { return a(i) / (i - 4); }, "Q");
  HostBuffer ha(DType::i32, {6});
  ha.fill(12);
  EXPECT_EQ(error_of([&] { evaluate(Program({a}, {q}), {ha}); }),
            "compute 'Q': i32 division by zero in (A[i0] / (i0 - 4)) at element [4]");

  // Inside a reduction, on many threads: the lowest failing element is reported whatever the thread count.
  auto k = reduce_axis(30, "k");
  auto r = compute(
      {40, 30}, [&](Var i, Var j) { return sum(i / (k + j + select(i < 25, 1, 0)), {k}); }, "R");
  const Program program({a}, {r});
  for (int threads : {1, 2, 3}) {
    ReferenceOptions options;
    options.threads = threads;
    EXPECT_EQ(
        error_of([&] { evaluate(program, {ha}, options); }),
        "compute 'R': i32 division by zero in (i0 / ((k + i1) + select((i0 < 25), 1, 0))) at element [25, 0] "
        "with k = 0")
        << threads;
  }
}

TEST(InterpreterError, DataDependentReadOutsideATensor) {
  auto x = placeholder({5}, DType::f32, "X");
  auto idx = placeholder({3}, DType::i32, "idx");
  auto y = compute(
      {3}, [&](Var i) { return x(idx(i)); }, "Y");
  HostBuffer hidx(DType::i32, {3});
  hidx.set(0, 4);
  hidx.set(1, 5);
  EXPECT_EQ(error_of([&] {
              evaluate(Program({x, idx}, {y}), {HostBuffer(DType::f32, {5}), hidx});
            }),
            "compute 'Y': index 0 of X[idx[i0]] is 5, outside [0, 5) at element [1]");
  hidx.set(1, -1);
  EXPECT_EQ(error_of([&] {
              evaluate(Program({x, idx}, {y}), {HostBuffer(DType::f32, {5}), hidx});
            }),
            "compute 'Y': index 0 of X[idx[i0]] is -1, outside [0, 5) at element [1]");
}

TEST(InterpreterError, CompareNeedsEqualShapes) {
  EXPECT_EQ(error_of([] {
              compare(HostBuffer(DType::bf16, {2, 3}), HostBuffer(DType::f32, {3, 2}));
            }),
            "compare: output bf16[2, 3] and reference f32[3, 2] differ in shape");
}

TEST(InterpreterError, HostBufferWithNegativeExtent) {
  EXPECT_EQ(error_of([] {
              HostBuffer(DType::f32, {4, -2});
            }),
            "host buffer of shape f32[4, -2] has a negative extent");
}

}  // namespace
}  // namespace comfuse::te
