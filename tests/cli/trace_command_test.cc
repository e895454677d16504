// `comfuse trace`: its arguments, the errors a user meets before any GPU is asked for, and a run (on a GPU
// where there is one; without one, the error that says so).
#include "cli/trace_command.h"

#include <gtest/gtest.h>

#include <sstream>

#include "runtime/gpu_test_guard.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"
#include "te/json.h"
#include "te/workloads.h"

namespace comfuse::cli {
namespace {

struct Outcome {
  int code;
  std::string out, err;
};

Outcome trace(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run_trace(args, out, err);
  return {code, out.str(), err.str()};
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

constexpr const char* kShape = "M=200,K=200,N=256";

// post_layernorm's default schedule at kShape as JSON, with `changes` merged in.
std::string schedule_json(const nlohmann::json& changes = nlohmann::json::object()) {
  const schedule::FusionPlan plan =
      schedule::plan_fusion(te::build_workload("post_layernorm", te::parse_shape(kShape)));
  nlohmann::json json = schedule::to_json(schedule::default_schedule(plan));
  json.update(changes);
  return json.dump();
}

TEST(TraceCommand, ArgumentErrorsShowTheUsage) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"post_layernorm"},
                                               {"post_layernorm", "--log", "a", "--schedule", "{}"},
                                               {"post_layernorm", "--schedule", "{}", "--launches", "0"},
                                               {"post_layernorm", "--schedule", "{}", "--bogus"}}) {
    const Outcome run = trace(args);
    EXPECT_EQ(run.code, 2);
    EXPECT_TRUE(has(run.err, "usage: comfuse trace WORKLOAD")) << run.err;
  }
  EXPECT_TRUE(has(trace({"post_layernorm", "--schedule", "{}", "--launches", "x"}).err,
                  "--launches: expected an integer from 1 to 1000, got 'x'"));
  EXPECT_TRUE(has(trace({"post_layernorm", "--schedule", "{}", "--repeats", "1001"}).err,
                  "--repeats: expected an integer from 0 to 1000, got '1001'"));
  EXPECT_TRUE(has(trace({"post_layernorm", "--schedule", "{}", "--seed", "-1"}).err,
                  "--seed: expected an integer of at least 0, got '-1'"));
  EXPECT_TRUE(has(trace({"post_layernorm", "--schedule", "{}", "--row-slices", "2,1"}).err,
                  "--row-slices: expected counts from 2 to 64, got '1'"));
  EXPECT_TRUE(has(trace({"post_layernorm", "--schedule", "{}", "--row-slices", "65"}).err,
                  "--row-slices: expected counts from 2 to 64, got '65'"));
}

TEST(TraceCommand, UserErrorsComeBeforeTheGpu) {
  const Outcome b2b = trace({"mlp_relu", "--schedule", "{}"});
  EXPECT_EQ(b2b.code, 2);
  EXPECT_TRUE(has(b2b.err, "workload 'mlp_relu' runs as back-to-back kernels")) << b2b.err;

  const Outcome not_json = trace({"post_layernorm", "--shape", kShape, "--schedule", "{bm: 64"});
  EXPECT_EQ(not_json.code, 2);
  EXPECT_TRUE(has(not_json.err, "--schedule: not JSON")) << not_json.err;

  const Outcome illegal =
      trace({"post_layernorm", "--shape", kShape, "--schedule", schedule_json({{"tma_store", true}})});
  EXPECT_EQ(illegal.code, 2);
  EXPECT_TRUE(has(illegal.err, "tma_store=true with row reductions")) << illegal.err;

  const Outcome missing_log = trace({"post_layernorm", "--log", "/nonexistent/log.jsonl"});
  EXPECT_EQ(missing_log.code, 2);
  EXPECT_TRUE(has(missing_log.err, "/nonexistent/log.jsonl")) << missing_log.err;
}

TEST(TraceCommand, SetChangesKnobsOfTheScheduleBeforeTheGpu) {
  // The default schedule with one knob changed: printed as given, and the kernel is that schedule's.
  const Outcome pairs =
      trace({"post_layernorm", "--shape", kShape, "--schedule", schedule_json({{"vector_loads", false}}),
             "--set", "vector_loads=true,stages=3"});
  EXPECT_NE(pairs.code, 2) << pairs.err;  // 4 without a GPU: the schedule and its kernel were fine
  EXPECT_TRUE(has(pairs.out, "set        vector_loads=true, stages=3\n")) << pairs.out;
  EXPECT_TRUE(has(pairs.out, "stages=3 ")) << pairs.out;
  EXPECT_TRUE(has(pairs.out, " vector_loads")) << pairs.out;
  // A malformed or unknown setting, a value of the wrong type, and a setting the plan cannot take: user
  // errors, each naming what is wrong.
  const std::string base = schedule_json();
  const std::vector<std::pair<std::string, std::string>> mistakes = {
      {"stages", "--set 'stages': expected knob=value"},
      {"split_k=2", "--set 'split_k=2': no knob 'split_k' (knobs: "},
      {"persistent=yes", "--set 'persistent=yes': persistent takes boolean"},
      {"warp_roles=pingpong", "--set.warp_roles: unknown value 'pingpong'"},
      {"tma_store=true", "tma_store=true with row reductions"}};
  for (const auto& [setting, message] : mistakes) {
    const Outcome run = trace({"post_layernorm", "--shape", kShape, "--schedule", base, "--set", setting});
    EXPECT_EQ(run.code, 2) << setting;
    EXPECT_TRUE(has(run.err, message)) << run.err;
  }
}

TEST(TraceCommand, RunsTheTracedKernelOrSaysThereIsNoGpu) {
  const Outcome run = trace({"post_layernorm", "--shape", kShape, "--schedule", schedule_json()});
  if (gpu_test::gpu_unavailable_reason()) {
    EXPECT_EQ(run.code, 4) << run.err;
    EXPECT_TRUE(has(run.err, "no CUDA device")) << run.err;
    EXPECT_TRUE(has(run.out, "schedule   ")) << "the schedule was checked before the GPU was asked for";
    return;
  }
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(has(run.out, "check      ok")) << run.out;
  EXPECT_TRUE(has(run.out, "mainloops cover")) << run.out;
  EXPECT_TRUE(has(run.out, "mainloop begin")) << run.out;
  EXPECT_TRUE(has(run.out, "time       traced ")) << run.out;
  EXPECT_FALSE(has(run.out, "kernels    untraced")) << "one kernel: no per-kernel times";
}

TEST(TraceCommand, ADeferredReductionsKernelsAreTimedApart) {
  const Outcome run = trace({"post_layernorm", "--shape", kShape, "--schedule",
                             schedule_json({{"reduction", "deferred"},
                                            {"carried", "l2_stash"},
                                            {"cluster_n", 1},
                                            {"one_pass_variance", true}})});
  if (gpu_test::gpu_unavailable_reason()) {
    EXPECT_EQ(run.code, 4) << run.err;
    EXPECT_TRUE(has(run.out, "reduction=deferred")) << run.out;
    return;
  }
  EXPECT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(has(run.out, "check      ok")) << run.out;
  EXPECT_TRUE(has(run.out, "kernels    untraced main ")) << run.out;
  EXPECT_TRUE(has(run.out, " us, finish ")) << run.out;
}

// Row slices: the deferred schedule at 400 rows run as two launches of 200 rows and four of 100 (both with
// tails: BM is 128), each checked against the whole program's reference with the outputs poisoned; three
// slices do not cut 400 rows and say so.
TEST(TraceCommand, RowSlicesRunTheScheduleOverSlicesOfTheRowsAndAreChecked) {
  const std::string schedule = schedule_json(
      {{"reduction", "deferred"}, {"carried", "l2_stash"}, {"cluster_n", 1}, {"one_pass_variance", true}});
  const Outcome run = trace({"post_layernorm", "--shape", "M=400,K=200,N=256", "--schedule", schedule,
                             "--repeats", "3", "--row-slices", "2,3,4"});
  if (gpu_test::gpu_unavailable_reason()) {
    EXPECT_EQ(run.code, 4) << run.err;
    EXPECT_TRUE(has(run.out, "reduction=deferred")) << run.out;
    return;
  }
  EXPECT_EQ(run.code, 0) << run.err << run.out;
  EXPECT_TRUE(has(run.out, "slices     2 x 200 rows: check ok")) << run.out;
  EXPECT_TRUE(has(run.out, "slices     4 x 100 rows: check ok")) << run.out;
  EXPECT_TRUE(has(run.out, "slices     3: M = 400 rows do not cut into 3 equal slices")) << run.out;
  EXPECT_TRUE(has(run.out, "(main ")) << "each slice ran a main and a finish kernel: " << run.out;
}

}  // namespace
}  // namespace comfuse::cli
