// The three kinds of failure comfuse reports: the user's fault, ours, and the platform's.
#pragma once

#include <stdexcept>
#include <string>

namespace comfuse {

/// The user's program, schedule, shape or input file is wrong. The message names the object and the values.
class CompileError : public std::runtime_error {
 public:
  explicit CompileError(const std::string& message) : std::runtime_error(message) {}
};

/// An invariant of comfuse itself was broken: a bug, never the user's fault.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

/// A CUDA driver, NVRTC or CUPTI call failed. Carries the API name, its result code and any log.
class RuntimeError : public std::runtime_error {
 public:
  RuntimeError(std::string api, int code, std::string detail, std::string log = {});

  const std::string& api() const { return api_; }
  int code() const { return code_; }
  const std::string& log() const { return log_; }

 private:
  std::string api_;
  int code_;
  std::string log_;
};

/// Throws InternalError with `message` and the source location when `condition` is false.
#define COMFUSE_CHECK(condition, message)                                                          \
  do {                                                                                             \
    if (!(condition)) ::comfuse::internal_check_failed(#condition, (message), __FILE__, __LINE__); \
  } while (false)

[[noreturn]] void internal_check_failed(const char* condition, const std::string& message, const char* file,
                                        int line);

}  // namespace comfuse
