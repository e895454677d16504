// Message formatting for comfuse's error types.
#include "support/error.h"

namespace comfuse {
namespace {

std::string runtime_message(const std::string& api, int code, const std::string& detail,
                            const std::string& log) {
  std::string message = api + " failed with code " + std::to_string(code);
  if (!detail.empty()) message += ": " + detail;
  if (!log.empty()) message += "\n" + log;
  return message;
}

}  // namespace

RuntimeError::RuntimeError(std::string api, int code, std::string detail, std::string log)
    : std::runtime_error(runtime_message(api, code, detail, log)),
      api_(std::move(api)),
      code_(code),
      log_(std::move(log)) {}

void internal_check_failed(const char* condition, const std::string& message, const char* file, int line) {
  throw InternalError(std::string("internal error: ") + message + " (" + condition + " at " + file + ":" +
                      std::to_string(line) + ")");
}

}  // namespace comfuse
