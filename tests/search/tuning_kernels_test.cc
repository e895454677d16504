// Which kernels a workload is tuned as: one fused-GEMM kernel, two parts plus the fused back-to-back kernel,
// or the fused back-to-back kernel alone; each cut into fewer rows as the reference check cuts it.
#include "search/tuning_kernels.h"

#include <gtest/gtest.h>

#include "te/error_of.h"
#include "te/row_slice.h"

namespace comfuse::search {
namespace {

using Role = TuningKernel::Role;

std::vector<Role> roles(const std::vector<TuningKernel>& kernels) {
  std::vector<Role> result;
  for (const TuningKernel& k : kernels) result.push_back(k.role);
  return result;
}

TEST(TuningKernels, SingleGemmWorkloadIsOneKernel) {
  const std::vector<TuningKernel> kernels =
      tuning_kernels("post_layernorm", {{"M", 256}, {"K", 64}, {"N", 128}});
  ASSERT_EQ(roles(kernels), std::vector<Role>{Role::kWhole});
  EXPECT_EQ(te::with_rows(kernels[0].program, 64).inputs()[0].shape()[0], 64);  // X with 64 of its rows
}

TEST(TuningKernels, SmallMlpIsTwoPartsAndTheFusedKernel) {
  const std::vector<TuningKernel> kernels =
      tuning_kernels("mlp_relu", {{"M", 300}, {"K", 64}, {"N", 128}, {"O", 64}});
  ASSERT_EQ(roles(kernels), (std::vector<Role>{Role::kFirstPart, Role::kSecondPart, Role::kFusedB2B}));
  EXPECT_EQ(kernels[2].program.outputs()[0].shape(), (std::vector<std::int64_t>{300, 64}));
  EXPECT_EQ(te::with_rows(kernels[1].program, 64).outputs()[0].shape(), (std::vector<std::int64_t>{64, 64}));
  EXPECT_EQ(te::with_rows(kernels[2].program, 64).outputs()[0].shape(), (std::vector<std::int64_t>{64, 64}));
}

TEST(TuningKernels, LargeMlpHasNoFusedKernel) {
  const std::vector<TuningKernel> kernels =
      tuning_kernels("mlp_relu", {{"M", 256}, {"K", 64}, {"N", 128}, {"O", 1024}});
  EXPECT_EQ(roles(kernels), (std::vector<Role>{Role::kFirstPart, Role::kSecondPart}));
}

TEST(TuningKernels, AttentionIsTheFusedKernelAloneCutByBatches) {
  const std::vector<TuningKernel> kernels =
      tuning_kernels("attention", {{"BH", 4}, {"L", 128}, {"D", 64}, {"CAUSAL", 0}});
  ASSERT_EQ(roles(kernels), std::vector<Role>{Role::kFusedB2B});
  EXPECT_EQ(te::with_rows(kernels[0].program, 1).outputs()[0].shape(),
            (std::vector<std::int64_t>{1, 128, 64}));
}

TEST(TuningKernels, NeitherPlanNamesBothReasons) {
  const std::string error = te::error_of([] {
    tuning_kernels("attention", {{"BH", 2}, {"L", 64}, {"D", 72}, {"CAUSAL", 0}});
  });
  EXPECT_NE(error.find("batched contraction"), std::string::npos) << error;
  EXPECT_NE(error.find("; fused back-to-back kernel: 'V' is [K, O] with O=72"), std::string::npos) << error;
}

}  // namespace
}  // namespace comfuse::search
