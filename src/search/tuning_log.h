// The tuning log file: JSON Lines appended safely by concurrent writers, loaded with every line validated.
#pragma once

#include <string>
#include <vector>

#include "search/tuning_record.h"

namespace comfuse::search {

/// Deepest JSON nesting a log line may have; deeper lines are rejected before they are parsed.
inline constexpr int kMaxLineNesting = 64;

struct LoadResult {
  std::vector<TuningRecord> records;  // the valid lines, in file order
  std::vector<std::string> problems;  // "FILE:LINE: reason" for each line skipped, in file order
};

/// An append-only JSON Lines file of TuningRecords.
class TuningLog {
 public:
  explicit TuningLog(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }

  /// Appends the record's canonical line: opens with O_APPEND|O_CREAT, takes an exclusive flock, writes the
  /// line and its newline in one write(), fsyncs, unlocks and closes. Concurrent writers (threads or
  /// processes) interleave whole lines; a kill loses at most the record in flight. Throws std::system_error
  /// naming the file when the file cannot be opened or written.
  void append(const TuningRecord& record) const;

  /// Reads `path` line by line. A malformed line (not JSON, invalid UTF-8, nesting deeper than
  /// kMaxLineNesting, a key repeated in an object, anything record_from_json rejects, an empty line, or a
  /// last line without its newline) is reported as "FILE:LINE: reason" in problems and skipped; when
  /// `strict`, the first one is thrown as a CompileError with that text instead. Throws CompileError when
  /// the file cannot be read. Never crashes on any content.
  static LoadResult load(const std::string& path, bool strict = false);

  /// Parses one line (without its newline) as a record; errors are CompileErrors without the FILE:LINE
  /// prefix.
  static TuningRecord parse_line(std::string_view line);

 private:
  std::string path_;
};

}  // namespace comfuse::search
