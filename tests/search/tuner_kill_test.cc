// kill -9 during a tuning run loses at most the record in flight: every line in the log is whole, and every
// record the tuner reported written is there.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "search/tuner.h"
#include "search/tuning_log.h"
#include "simulated_measurer.h"

namespace comfuse::search {
namespace {

TEST(TunerKill, KillNineAtRandomPointsLosesAtMostOneRecord) {
  const te::Program program = te::build_workload("post_layernorm", {{"M", 16384}, {"K", 1024}, {"N", 1024}});
  const schedule::FusionPlan plan = schedule::plan_fusion(program);
  std::mt19937 random(20261202);
  for (int round = 0; round < 20; ++round) {
    const auto log = std::filesystem::temp_directory_path() /
                     ("comfuse_kill_" + std::to_string(::getpid()) + "_" + std::to_string(round) + ".jsonl");
    std::filesystem::remove(log);
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      SimulatedMeasurer measurer(plan);
      measurer.delay = std::chrono::milliseconds(2);
      TuneOptions options;
      options.trials = 150;
      options.repeats = 3;
      options.jobs = 1;
      options.log_path = log.string();
      options.compile = [](const codegen::KernelSource& k) { return fake_compile(k); };
      // Tell the parent how many records are on disk, after each append returned.
      options.progress = [&](const TuneProgress& p) {
        const int written = p.records_written;
        (void)!::write(pipe_fds[1], &written, sizeof written);
      };
      tune(program, measurer, options);
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 400)(random)));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    int acknowledged = 0, value = 0;
    while (::read(pipe_fds[0], &value, sizeof value) == sizeof value) acknowledged = value;
    ::close(pipe_fds[0]);

    if (!std::filesystem::exists(log)) {  // killed before the first record
      EXPECT_EQ(acknowledged, 0) << "round " << round;
      continue;
    }
    const LoadResult loaded = TuningLog::load(log.string());
    EXPECT_TRUE(loaded.problems.size() <= 1) << "round " << round << ": " << loaded.problems.front();
    EXPECT_GE(static_cast<int>(loaded.records.size()), acknowledged) << "round " << round;
    EXPECT_LE(static_cast<int>(loaded.records.size()), acknowledged + 1) << "round " << round;
    std::filesystem::remove(log);
  }
}

}  // namespace
}  // namespace comfuse::search
