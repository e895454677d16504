// The suite's rows and how --only selects them.
#include "suite.h"

#include <gtest/gtest.h>

namespace comfuse::bench {
namespace {

int count_selected(const std::vector<std::string>& only) {
  int count = 0;
  for (const SuiteEntry& entry : suite()) count += selected(entry, only) ? 1 : 0;
  return count;
}

TEST(Suite, OnlySelectsByWorkloadOrByInstanceName) {
  const int all = static_cast<int>(suite().size());
  EXPECT_EQ(count_selected({}), all);
  EXPECT_EQ(count_selected({"post_layernorm"}), 4);  // every shape of the workload
  EXPECT_EQ(count_selected({"post_layernorm_M16384_K1024_N1024"}), 1);
  EXPECT_EQ(count_selected({"post_layernorm_M16384_K1024_N1024", "post_rmsnorm"}), 2);
  EXPECT_EQ(count_selected({"post_layernorm_M1_K1_N1"}), 0);
}

}  // namespace
}  // namespace comfuse::bench
