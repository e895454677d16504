// Containment: a worker that crashes, hangs, throws or exits is a record, and the next candidate runs in a
// fresh worker. Runs on the CPU with runners that misbehave on purpose.
#include "search/isolated_measurer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <limits>

#include <csignal>
#include <cstdlib>
#include <thread>

#include "search_fixture.h"
#include "support/error.h"

namespace comfuse::search {
namespace {

// Misbehaves according to the schedule's BN: 16 aborts (a crash by signal; SIGABRT rather than SIGSEGV so
// that sanitizer builds, which catch SIGSEGV themselves, see the same thing), 32 hangs, 48 throws a CUDA-like
// error (device unusable), 80 exits the process, 112 is a wrong answer whose error is NaN, anything else
// answers with BN microseconds.
class MisbehavingRunner : public CandidateRunner {
 public:
  runtime::DeviceFingerprint target() override { return h200(); }
  Measurement run(const schedule::Schedule& s, const std::string& image, int repeats,
                  bool* unusable) override {
    switch (s.bn) {
      case 16:
        std::abort();
      case 32:
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      case 48:
        *unusable = true;
        return Measurement{
            RecordStatus::kLaunchError, "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS", {}, 0};
      case 80:
        ::_exit(9);
      case 112:  // a kernel that left its NaN-poisoned outputs unwritten
        return Measurement{RecordStatus::kWrongAnswer,
                           "output differs from the reference",
                           {},
                           std::numeric_limits<double>::quiet_NaN()};
    }
    Measurement m;
    m.times_us.assign(repeats, s.bn);
    m.error = image;  // echoes the image so the test sees it travelled
    return m;
  }
  std::optional<double> gemm_alone_us(int) override { return 12.5; }
};

schedule::Schedule with_bn(int bn) {
  schedule::Schedule s;
  s.bn = bn;
  return s;
}

Measurement measure(IsolatedMeasurer& measurer, int bn) {
  runtime::CompiledProgram compiled;
  compiled.image = "cubin-" + std::to_string(bn);
  return measurer.measure(MeasureRequest{with_bn(bn), &compiled, 3, std::nullopt});
}

// Answers fused back-to-back candidates with stages x 10 microseconds (100 more with overlap).
class B2BRunner : public MisbehavingRunner {
 public:
  Measurement run_b2b(const schedule::B2BSchedule& s, const std::string& image, int repeats, bool*) override {
    Measurement m;
    m.times_us.assign(repeats, 10.0 * s.stages + (s.overlap ? 100 : 0));
    m.error = image;
    return m;
  }
};

TEST(IsolatedMeasurer, BackToBackCandidatesReachTheRunnersB2BEntry) {
  IsolatedMeasurer measurer([] { return std::make_unique<B2BRunner>(); }, {});
  runtime::CompiledProgram compiled;
  compiled.image = "b2b-cubin";
  MeasureRequest request;
  request.compiled = &compiled;
  request.repeats = 2;
  request.b2b = schedule::B2BSchedule{5, true};
  const Measurement m = measurer.measure(request);
  EXPECT_EQ(m.status, RecordStatus::kOk);
  EXPECT_EQ(m.times_us, (std::vector<double>{150, 150}));
  EXPECT_EQ(m.error, "b2b-cubin");
  // Without the schedule the same worker measures a fused-GEMM candidate.
  EXPECT_EQ(measure(measurer, 128).times_us, (std::vector<double>{128, 128, 128}));
  // A runner of single-GEMM workloads answers a B2B request with a launch error, not a crash.
  IsolatedMeasurer plain([] { return std::make_unique<MisbehavingRunner>(); }, {});
  const Measurement refused = plain.measure(request);
  EXPECT_EQ(refused.status, RecordStatus::kLaunchError);
  EXPECT_NE(refused.error.find("not the fused back-to-back kernel"), std::string::npos) << refused.error;
}

TEST(IsolatedMeasurer, ContainsEveryKindOfFailureAndCarriesOn) {
  IsolationOptions options;
  options.candidate_timeout_s = 1;
  IsolatedMeasurer measurer([] { return std::make_unique<MisbehavingRunner>(); }, options);
  EXPECT_EQ(measurer.target(), h200());

  const Measurement ok = measure(measurer, 128);
  EXPECT_EQ(ok.status, RecordStatus::kOk);
  EXPECT_EQ(ok.times_us, (std::vector<double>{128, 128, 128}));
  EXPECT_EQ(ok.error, "cubin-128");

  const Measurement crashed = measure(measurer, 16);
  EXPECT_EQ(crashed.status, RecordStatus::kCrash);
  EXPECT_NE(crashed.error.find("killed by signal 6"), std::string::npos) << crashed.error;

  const Measurement hang = measure(measurer, 32);
  EXPECT_EQ(hang.status, RecordStatus::kTimeout);
  EXPECT_NE(hang.error.find("no answer within 1 s"), std::string::npos) << hang.error;

  const Measurement fault = measure(measurer, 48);
  EXPECT_EQ(fault.status, RecordStatus::kLaunchError);
  EXPECT_NE(fault.error.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos);

  const Measurement exited = measure(measurer, 80);
  EXPECT_EQ(exited.status, RecordStatus::kCrash);
  EXPECT_NE(exited.error.find("exited with status 9"), std::string::npos) << exited.error;

  // A NaN error crosses as JSON's null and comes back NaN, a record like any wrong answer, the worker kept.
  const Measurement wrong = measure(measurer, 112);
  EXPECT_EQ(wrong.status, RecordStatus::kWrongAnswer);
  EXPECT_TRUE(std::isnan(wrong.max_rel_error));

  EXPECT_EQ(measure(measurer, 64).times_us, (std::vector<double>{64, 64, 64}));
  EXPECT_EQ(measurer.gemm_alone_us(10), 12.5);
  // The first worker, then one after each of the four failures.
  EXPECT_EQ(measurer.workers_started(), 5);
}

TEST(IsolatedMeasurer, ManyFailuresInARow) {
  IsolationOptions options;
  options.candidate_timeout_s = 5;
  IsolatedMeasurer measurer([] { return std::make_unique<MisbehavingRunner>(); }, options);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(measure(measurer, i % 2 == 0 ? 16 : 80).status, RecordStatus::kCrash);
    EXPECT_EQ(measure(measurer, 96).status, RecordStatus::kOk);
  }
  EXPECT_EQ(measurer.workers_started(), 11);
}

TEST(IsolatedMeasurer, ARunnerThatCannotStartIsAnError) {
  IsolatedMeasurer measurer([]() -> std::unique_ptr<CandidateRunner> {
    throw RuntimeError("cuInit", 100, "no CUDA-capable device is detected");
  });
  try {
    measurer.target();
    FAIL() << "expected a RuntimeError";
  } catch (const RuntimeError& error) {
    EXPECT_NE(std::string(error.what()).find("could not start"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("no CUDA-capable device"), std::string::npos) << error.what();
  }
}

TEST(IsolatedMeasurer, ProcessesEndWithTheMeasurer) {
  {
    IsolatedMeasurer measurer([] { return std::make_unique<MisbehavingRunner>(); });
    EXPECT_EQ(measure(measurer, 128).status, RecordStatus::kOk);
  }
  // The supervisor was reaped and no other child of this process remains.
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace comfuse::search
