// The on-disk cache of compiled programs, keyed by the sha256 of source, options, NVRTC version and arch.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/nvrtc_compiler.h"

namespace comfuse::runtime {

/// What KernelCache::compile found.
enum class CacheOutcome {
  /// A valid entry was loaded; nothing was compiled.
  hit,
  /// No entry existed; the program was compiled and stored.
  miss,
  /// An entry existed but failed its checks; it was deleted, and the program compiled and stored again.
  corrupt,
};

/// "hit", "miss" or "corrupt".
const char* cache_outcome_name(CacheOutcome outcome);

/// Compiled programs on disk, one file per key under <dir>/kernels/. Entries are written to a temporary file
/// in the same directory and renamed into place, so concurrent processes see either no entry or a whole one;
/// two processes storing one key both succeed and leave one entry. Each entry carries its sizes and a sha256
/// of its contents; an entry that fails any check (truncated, bytes flipped, another key's) is deleted and
/// never used.
class KernelCache {
 public:
  /// Uses `dir` when given, else default_dir(). The directory is created on first store.
  explicit KernelCache(std::filesystem::path dir = {});

  /// $COMFUSE_CACHE_DIR if set and non-empty, else $XDG_CACHE_HOME/comfuse, else $HOME/.cache/comfuse, else
  /// ./.cache/comfuse when HOME is unset too.
  static std::filesystem::path default_dir();

  /// The key of compiling `source` with `options`: 64 hex digits of the sha256 of the source, the full NVRTC
  /// option list, nvrtc_version(), the arch and the output kind, each length-prefixed.
  static std::string key(std::string_view source, const CompileOptions& options);

  /// The entry for `key`, or nullopt when there is none or it is corrupt (then it is deleted and `corrupt`,
  /// if given, set to true).
  std::optional<CompiledProgram> load(const std::string& key, bool* corrupt = nullptr) const;

  /// Writes `program` as the entry for `key`, replacing any entry atomically. Failures to write are
  /// RuntimeError naming the file operation and the path.
  void store(const std::string& key, const CompiledProgram& program) const;

  /// The cached program for (source, options), compiling and storing it on a miss. Compile errors are not
  /// cached: they propagate from compile().
  CompiledProgram compile(std::string_view source, const CompileOptions& options,
                          CacheOutcome* outcome = nullptr) const;

  /// Where the entry for `key` lives.
  std::filesystem::path entry_path(const std::string& key) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace comfuse::runtime
