// The tuning log file: JSON Lines appended safely by concurrent writers, loaded with every line validated.
#include "search/tuning_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "support/error.h"
#include "te/json.h"

namespace comfuse::search {
namespace {

using nlohmann::json;

// Closes a file descriptor on every path out of append.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// The deepest nesting of arrays and objects in `text`, brackets inside strings not counted.
int nesting_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// Messages may quote the input: keep them printable ASCII so a report is always valid text.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (out.size() > 400) out = out.substr(0, 400) + "...";
  return out;
}

}  // namespace

void TuningLog::append(const TuningRecord& record) const {
  const std::string line = record_to_json(record).dump() + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "tuning log '" + path_ + "': cannot open");
  FdCloser closer{fd};
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR)
      throw std::system_error(errno, std::generic_category(), "tuning log '" + path_ + "': cannot lock");
  }
  ssize_t written = -1;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const int write_errno = errno;
  const bool synced = written == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int sync_errno = errno;
  ::flock(fd, LOCK_UN);
  if (written != static_cast<ssize_t>(line.size())) {
    throw std::system_error(written < 0 ? write_errno : EIO, std::generic_category(),
                            "tuning log '" + path_ + "': cannot write");
  }
  if (!synced)
    throw std::system_error(sync_errno, std::generic_category(), "tuning log '" + path_ + "': cannot fsync");
}

TuningRecord TuningLog::parse_line(std::string_view line) {
  if (line.empty()) throw CompileError("empty line");
  if (nesting_depth(line) > kMaxLineNesting) {
    throw CompileError("nested deeper than " + std::to_string(kMaxLineNesting) + " levels");
  }
  const json j = te::parse_json_text(line);
  try {
    return record_from_json(j);
  } catch (const json::exception& error) {
    throw CompileError(std::string("malformed record: ") + error.what());
  }
}

LoadResult TuningLog::load(const std::string& path, bool strict) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw CompileError("tuning log '" + path + "': cannot open: " + std::strerror(errno));
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();

  LoadResult result;
  std::size_t start = 0;
  for (std::size_t number = 1; start < text.size(); ++number) {
    const std::size_t end = text.find('\n', start);
    const bool truncated = end == std::string::npos;
    const std::string_view line(text.data() + start, (truncated ? text.size() : end) - start);
    start = truncated ? text.size() : end + 1;
    std::string reason;
    if (truncated) {
      reason = "truncated line (no newline at the end of the file)";
    } else {
      try {
        result.records.push_back(parse_line(line));
      } catch (const CompileError& error) {
        reason = error.what();
      }
    }
    if (reason.empty()) continue;
    std::string problem = path + ":" + std::to_string(number) + ": " + printable(reason);
    if (strict) throw CompileError(problem);
    result.problems.push_back(std::move(problem));
  }
  return result;
}

}  // namespace comfuse::search
