// The supervisor/worker processes behind IsolatedMeasurer, and the parent's side of their protocol.
#include "search/isolated_measurer.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace comfuse::search {
namespace {

using nlohmann::json;

// Worker exit codes the supervisor acts on.
constexpr int kExitQuit = 0;      // asked to quit, or the tuning process went away: the supervisor ends too
constexpr int kExitRespawn = 3;   // the device is unusable after a candidate: start a fresh worker
constexpr int kExitNoDevice = 4;  // the runner could not start: the supervisor ends (reported as "failed")

constexpr std::size_t kMaxMessage = 1 << 20;

bool send_message(int fd, const json& message) {
  const std::string text = message.dump();
  return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

// Waits up to `timeout_ms` (negative: forever) for one message. nullopt on timeout; a closed socket is a
// RuntimeError.
std::optional<json> receive_message(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  for (;;) {
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) throw RuntimeError("poll", errno, std::strerror(errno));
    if (ready == 0) return std::nullopt;
    break;
  }
  std::string buffer(kMaxMessage, '\0');
  const ssize_t got = ::recv(fd, buffer.data(), buffer.size(), 0);
  if (got <= 0) throw RuntimeError("recv", got < 0 ? errno : 0, "the measuring supervisor went away");
  buffer.resize(static_cast<std::size_t>(got));
  return json::parse(buffer);
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended with wait status " + std::to_string(status);
}

// Dies with its parent; returns false when the parent is already gone.
bool die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return ::getppid() == parent;
}

json measurement_to_json(std::uint64_t id, const Measurement& m, bool exiting) {
  return json{{"id", id},
              {"status", status_name(m.status)},
              {"error", m.error},
              {"times_us", m.times_us},
              {"max_rel_error", m.max_rel_error},
              {"exiting", exiting}};
}

[[noreturn]] void worker_main(int fd, const RunnerFactory& factory) {
  std::unique_ptr<CandidateRunner> runner;
  try {
    runner = factory();
    send_message(fd, json{{"event", "ready"},
                          {"pid", ::getpid()},
                          {"target", runtime::fingerprint_to_json(runner->target())}});
  } catch (const std::exception& error) {
    send_message(fd, json{{"event", "failed"}, {"error", error.what()}});
    ::_exit(kExitNoDevice);
  }
  for (;;) {
    std::optional<json> request;
    try {
      request = receive_message(fd, -1);
    } catch (const std::exception&) {
      ::_exit(kExitQuit);
    }
    const std::string op = request->value("op", "");
    const std::uint64_t id = request->value("id", std::uint64_t{0});
    if (op == "measure") {
      Measurement m;
      bool unusable = false;
      try {
        std::ifstream file(request->at("image").get<std::string>(), std::ios::binary);
        std::stringstream image;
        image << file.rdbuf();
        const json& schedule = request->at("schedule");
        const int repeats = request->at("repeats").get<int>();
        m = schedule::is_b2b_schedule_json(schedule)
                ? runner->run_b2b(schedule::b2b_schedule_from_json(schedule), image.str(), repeats, &unusable)
                : runner->run(schedule::schedule_from_json(schedule), image.str(), repeats, &unusable);
      } catch (const std::exception& error) {
        m.status = RecordStatus::kLaunchError;
        m.error = error.what();
        unusable = true;  // whatever failed, a fresh worker is the safe state
      }
      send_message(fd, measurement_to_json(id, m, unusable));
      if (unusable) ::_exit(kExitRespawn);
    } else if (op == "gemm") {
      json reply = {{"id", id}, {"gemm_us", nullptr}};
      try {
        if (auto us = runner->gemm_alone_us(request->at("repeats").get<int>())) reply["gemm_us"] = *us;
      } catch (const std::exception& error) {
        reply["error"] = error.what();
      }
      send_message(fd, reply);
    } else {
      ::_exit(kExitQuit);
    }
  }
}

[[noreturn]] void supervisor_main(int fd, const RunnerFactory& factory) {
  const pid_t self = ::getpid();
  for (;;) {
    const pid_t worker = ::fork();
    if (worker == 0) {
      if (!die_with_parent(self)) ::_exit(kExitQuit);
      worker_main(fd, factory);
    }
    if (worker < 0) {
      send_message(fd, json{{"event", "failed"}, {"error", std::string("fork: ") + std::strerror(errno)}});
      ::_exit(1);
    }
    int status = 0;
    while (::waitpid(worker, &status, 0) < 0 && errno == EINTR) {
    }
    send_message(fd, json{{"event", "exited"}, {"pid", worker}, {"how", describe_exit(status)}});
    if (WIFEXITED(status) && (WEXITSTATUS(status) == kExitQuit || WEXITSTATUS(status) == kExitNoDevice)) {
      ::_exit(0);
    }
  }
}

}  // namespace

struct IsolatedMeasurer::Reply {
  json message;
  bool timed_out = false;
  bool crashed = false;
  std::string how;  // how the worker ended, when it crashed
};

IsolatedMeasurer::IsolatedMeasurer(RunnerFactory factory, IsolationOptions options) : options_(options) {
  std::string dir = (std::filesystem::temp_directory_path() / "comfuse-measure-XXXXXX").string();
  if (::mkdtemp(dir.data()) == nullptr)
    throw RuntimeError("mkdtemp", errno, std::strerror(errno) + (" in " + dir));
  scratch_dir_ = dir;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    throw RuntimeError("socketpair", errno, std::strerror(errno));
  }
  std::cout.flush();
  std::cerr.flush();
  const pid_t parent = ::getpid();
  supervisor_ = ::fork();
  if (supervisor_ < 0) throw RuntimeError("fork", errno, std::strerror(errno));
  if (supervisor_ == 0) {
    ::close(fds[0]);
    if (!die_with_parent(parent)) ::_exit(0);
    supervisor_main(fds[1], factory);
  }
  ::close(fds[1]);
  socket_ = fds[0];
}

IsolatedMeasurer::~IsolatedMeasurer() {
  if (ready_) send_message(socket_, json{{"op", "quit"}});
  // The worker dies with the supervisor (PR_SET_PDEATHSIG); no stale worker pid is ever signalled.
  if (supervisor_ > 0) {
    ::kill(supervisor_, SIGKILL);
    while (::waitpid(supervisor_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (socket_ >= 0) ::close(socket_);
  std::error_code ignored;
  std::filesystem::remove_all(scratch_dir_, ignored);
}

void IsolatedMeasurer::ensure_ready() {
  if (ready_) return;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.startup_timeout_s);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const std::optional<json> message = receive_message(socket_, std::max<int>(0, left.count()));
    if (!message) {
      throw RuntimeError(
          "measuring worker", -1,
          "no worker became ready within " + std::to_string(options_.startup_timeout_s) + " s");
    }
    const std::string event = message->value("event", "");
    if (event == "ready") {
      worker_ = message->at("pid").get<pid_t>();
      target_ = runtime::fingerprint_from_json(message->at("target"));
      ready_ = true;
      ++workers_started_;
      return;
    }
    if (event == "failed") {
      throw RuntimeError("measuring worker", -1, "could not start: " + message->value("error", ""));
    }
    // "exited" of a worker already accounted for, or a late answer to an abandoned request: skip.
  }
}

IsolatedMeasurer::Reply IsolatedMeasurer::call(const std::string& request_text, double timeout_s) {
  ensure_ready();
  json request = json::parse(request_text);
  const std::uint64_t id = next_id_++;
  request["id"] = id;
  if (!send_message(socket_, request)) throw RuntimeError("send", errno, "the measuring worker went away");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const std::optional<json> message = receive_message(socket_, std::max<int>(0, left.count()));
    if (!message) {
      ::kill(worker_, SIGKILL);
      ready_ = false;
      // Wait for the supervisor to reap it, so that the next worker starts from a clean slate.
      for (int i = 0; i < 100; ++i) {
        const std::optional<json> after = receive_message(socket_, 100);
        if (after && after->value("event", "") == "exited" && after->value("pid", -1) == worker_) break;
      }
      worker_ = -1;
      return Reply{{}, true, false, ""};
    }
    if (message->value("id", std::uint64_t{0}) == id) {
      if (message->value("exiting", false)) ready_ = false;
      return Reply{*message, false, false, ""};
    }
    if (message->value("event", "") == "exited" && message->value("pid", -1) == worker_) {
      ready_ = false;
      worker_ = -1;
      return Reply{{}, false, true, message->value("how", "")};
    }
  }
}

runtime::DeviceFingerprint IsolatedMeasurer::target() {
  ensure_ready();
  return *target_;
}

Measurement CandidateRunner::run_b2b(const schedule::B2BSchedule&, const std::string&, int, bool*) {
  Measurement m;
  m.status = RecordStatus::kLaunchError;
  m.error = "this workload's runner measures fused-GEMM kernels, not the fused back-to-back kernel";
  return m;
}

Measurement IsolatedMeasurer::measure(const MeasureRequest& request) {
  const std::string image_path = scratch_dir_ + "/candidate.cubin";
  {
    std::ofstream file(image_path, std::ios::binary | std::ios::trunc);
    if (request.compiled != nullptr) file << request.compiled->image;
    if (!file) throw RuntimeError("write", errno, "cannot write " + image_path);
  }
  const json message = {
      {"op", "measure"},
      {"schedule", request.b2b ? schedule::to_json(*request.b2b) : schedule::to_json(request.schedule)},
      {"image", image_path},
      {"repeats", request.repeats}};
  const Reply reply = call(message.dump(), options_.candidate_timeout_s);
  Measurement m;
  if (reply.timed_out) {
    m.status = RecordStatus::kTimeout;
    m.error = "no answer within " + std::to_string(static_cast<int>(options_.candidate_timeout_s)) +
              " s: the worker was killed";
    return m;
  }
  if (reply.crashed) {
    m.status = RecordStatus::kCrash;
    m.error = "the worker " + reply.how;
    return m;
  }
  const std::optional<RecordStatus> status = parse_status(reply.message.at("status").get<std::string>());
  m.status = status.value_or(RecordStatus::kCrash);
  m.error = reply.message.at("error").get<std::string>();
  // JSON has no NaN: the worker's writer turns one into null (an output left NaN gives a NaN error).
  const auto number = [](const json& value) {
    return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.get<double>();
  };
  for (const json& time : reply.message.at("times_us")) m.times_us.push_back(number(time));
  m.max_rel_error = number(reply.message.at("max_rel_error"));
  return m;
}

std::optional<double> IsolatedMeasurer::gemm_alone_us(int repeats) {
  const Reply reply = call(json{{"op", "gemm"}, {"repeats", repeats}}.dump(), options_.candidate_timeout_s);
  if (reply.timed_out || reply.crashed || reply.message.at("gemm_us").is_null()) return std::nullopt;
  return reply.message.at("gemm_us").get<double>();
}

}  // namespace comfuse::search
