// Workload keys: independent of construction order and of the process, sensitive to any change, pinned.
#include <gtest/gtest.h>

#include <unistd.h>
#include "support/fresh_process.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "te/equality.h"
#include "te/json.h"

namespace comfuse::te {
namespace {

// GEMM + bias + relu, with a row max subtracted: two branches over the GEMM that the output joins.
// `swap_order` creates the placeholders, reduce axes and branches in the other order; the inputs list is the
// same.
Program known_program(bool swap_order = false, double bias_scale = 0.5) {
  Tensor X, W, b;
  if (swap_order) {
    b = placeholder({3}, DType::f32, "b");
    W = placeholder({8, 3}, DType::bf16, "W");
    X = placeholder({4, 8}, DType::bf16, "X");
  } else {
    X = placeholder({4, 8}, DType::bf16, "X");
    W = placeholder({8, 3}, DType::bf16, "W");
    b = placeholder({3}, DType::f32, "b");
  }
  Var k, j;
  if (swap_order) {
    j = reduce_axis(3, "j");
    k = reduce_axis(8, "k");
  } else {
    k = reduce_axis(8, "k");
    j = reduce_axis(3, "j");
  }
  auto G = compute(
      {4, 3}, [&](Var m, Var n) { return sum(cast(DType::f32, X(m, k)) * cast(DType::f32, W(k, n)), {k}); },
      "G");
  Tensor relu, row_max;
  const auto make_relu = [&] {
    relu = compute(
        {4, 3}, [&](Var m, Var n) { return max(G(m, n) + b(n) * bias_scale, Expr(0.0)); }, "relu");
  };
  const auto make_row_max = [&] {
    row_max = compute(
        {4}, [&](Var m) { return max_reduce(G(m, j), {j}); }, "row_max");
  };
  if (swap_order) {
    make_row_max();
    make_relu();
  } else {
    make_relu();
    make_row_max();
  }
  auto Y = compute(
      {4, 3}, [&](Var m, Var n) { return cast(DType::bf16, relu(m, n) - row_max(m)); }, "Y");
  return Program({X, W, b}, {Y});
}

constexpr const char* kPrintKeyVariable = "COMFUSE_TEST_PRINT_WORKLOAD_KEY";

TEST(WorkloadKey, IsSha256OfTheCanonicalText) {
  const std::string key = workload_key(known_program());
  ASSERT_EQ(key.size(), 7u + 64u);
  EXPECT_EQ(key.substr(0, 7), "sha256:");
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef", 7), std::string::npos);
}

TEST(WorkloadKey, SameForTheSameProgramBuiltTwiceOrInAnotherOrder) {
  const Program a = known_program(), b = known_program(), swapped = known_program(/*swap_order=*/true);
  ASSERT_TRUE(structural_equal(a, swapped));
  EXPECT_EQ(workload_key(a), workload_key(b));
  EXPECT_EQ(workload_key(a), workload_key(swapped));
  EXPECT_EQ(serialize(a), serialize(swapped));
}

TEST(WorkloadKey, ChangesWithAnyChange) {
  const std::string key = workload_key(known_program());
  EXPECT_NE(workload_key(known_program(false, /*bias_scale=*/0.25)), key);
  auto X = placeholder({4, 8}, DType::bf16, "X");
  auto W = placeholder({8, 3}, DType::bf16, "W");
  const auto gemm = [&](const std::string& name, DType out) {
    auto k = reduce_axis(8, "k");
    return Program(
        {X, W},
        {compute(
            {4, 3}, [&](Var m, Var n) { return sum(cast(out, X(m, k)) * cast(out, W(k, n)), {k}); }, name)});
  };
  EXPECT_EQ(workload_key(gemm("Y", DType::f32)), workload_key(gemm("Y", DType::f32)));
  EXPECT_NE(workload_key(gemm("Y", DType::f32)), workload_key(gemm("Z", DType::f32)));
  EXPECT_NE(workload_key(gemm("Y", DType::f32)), workload_key(gemm("Y", DType::f16)));
  // The order of the inputs is part of the signature.
  auto k = reduce_axis(8, "k");
  auto Y = compute(
      {4, 3}, [&](Var m, Var n) { return sum(cast(DType::f32, X(m, k)) * cast(DType::f32, W(k, n)), {k}); },
      "Y");
  EXPECT_NE(workload_key(Program({X, W}, {Y})), workload_key(Program({W, X}, {Y})));
}

TEST(WorkloadKey, PinnedForAKnownProgram) {
  const std::string key = workload_key(known_program());
  if (const char* print = std::getenv(kPrintKeyVariable); print != nullptr && std::string(print) == "1") {
    std::printf("workload key: %s\n", key.c_str());
    std::fflush(stdout);
  }
  // Pinned on purpose: this literal changes only when the canonical JSON format changes, which invalidates
  // every tuning log. If this fails, the format changed by accident, or on purpose and the logs need a new
  // version.
  EXPECT_EQ(key, "sha256:af45c14ed585c87a192beeb09f2e69469136a2f27a88cf8464c7d302a1bf43ae");
}

std::string key_from_another_process() {
  return testing_support::value_from_fresh_process(kPrintKeyVariable, "WorkloadKey.PinnedForAKnownProgram",
                                                   "workload key: ");
}

TEST(WorkloadKey, SameInOtherProcesses) {
  const std::string key = workload_key(known_program());
  EXPECT_EQ(key_from_another_process(), key);
  EXPECT_EQ(key_from_another_process(), key);
}

}  // namespace
}  // namespace comfuse::te
