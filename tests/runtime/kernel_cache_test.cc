// The compiled-kernel cache: keys, hits and misses, corrupt entries, and two processes racing on one key.
#include "runtime/kernel_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "runtime/elf_reader.h"
#include "runtime/test_kernels.h"
#include "support/error.h"

namespace comfuse::runtime {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<long>(bytes.size()));
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  return files;
}

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "comfuse-cache-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_F(KernelCacheTest, MissThenHit) {
  KernelCache cache(dir_);
  CacheOutcome outcome = CacheOutcome::hit;
  const CompiledProgram first = cache.compile(test_kernels::kVectorAdd, {}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::miss);
  EXPECT_TRUE(fs::exists(cache.entry_path(KernelCache::key(test_kernels::kVectorAdd, {}))));
  const CompiledProgram second = cache.compile(test_kernels::kVectorAdd, {}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::hit);
  EXPECT_EQ(second, first);
  EXPECT_TRUE(second.kernels.contains("vector_add"));
  EXPECT_EQ(files_in(dir_ / "kernels").size(), 1u);
}

TEST_F(KernelCacheTest, KeyCoversSourceOptionsArchAndOutput) {
  const std::string base = KernelCache::key(test_kernels::kVectorAdd, {});
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(KernelCache::key(test_kernels::kVectorAdd, {}), base);
  EXPECT_NE(KernelCache::key(std::string(test_kernels::kVectorAdd) + " ", {}), base);
  CompileOptions options;
  options.extra = {"-DX=1"};
  EXPECT_NE(KernelCache::key(test_kernels::kVectorAdd, options), base);
  options = {};
  options.arch = "sm_90";
  EXPECT_NE(KernelCache::key(test_kernels::kVectorAdd, options), base);
  options = {};
  options.output = OutputKind::ptx;
  EXPECT_NE(KernelCache::key(test_kernels::kVectorAdd, options), base);
}

// Damages the stored entry with `damage`, then expects the next compile to detect, delete and recompile it.
void expect_recompiled_after(const fs::path& dir, const std::function<void(std::string&)>& damage) {
  KernelCache cache(dir);
  const std::string key = KernelCache::key(test_kernels::kVectorAdd, {});
  CacheOutcome outcome = CacheOutcome::hit;
  const CompiledProgram original = cache.compile(test_kernels::kVectorAdd, {}, &outcome);
  std::string bytes = read_file(cache.entry_path(key));
  damage(bytes);
  write_file(cache.entry_path(key), bytes);

  bool corrupt = false;
  EXPECT_FALSE(cache.load(key, &corrupt).has_value());
  EXPECT_TRUE(corrupt);
  EXPECT_FALSE(fs::exists(cache.entry_path(key))) << "a corrupt entry must be deleted";

  write_file(cache.entry_path(key), bytes);
  const CompiledProgram again = cache.compile(test_kernels::kVectorAdd, {}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::corrupt);
  // NVRTC's cubins are deterministic; its log is not (ptxas reports its compile time).
  EXPECT_EQ(again.image, original.image);
  EXPECT_EQ(again.kernels, original.kernels);
  EXPECT_EQ(again.options, original.options);
  EXPECT_TRUE(cache.load(key).has_value()) << "the recompiled entry is stored again";
}

TEST_F(KernelCacheTest, TruncatedEntryIsRecompiledNotLoaded) {
  expect_recompiled_after(dir_, [](std::string& bytes) { bytes.resize(bytes.size() / 2); });
}

TEST_F(KernelCacheTest, EntryTruncatedByOneByteIsRecompiled) {
  expect_recompiled_after(dir_, [](std::string& bytes) { bytes.pop_back(); });
}

TEST_F(KernelCacheTest, FlippedImageByteIsRecompiledNotLoaded) {
  expect_recompiled_after(dir_, [](std::string& bytes) { bytes[bytes.size() - 100] ^= 0x40; });
}

TEST_F(KernelCacheTest, FlippedHeaderByteIsRecompiledNotLoaded) {
  expect_recompiled_after(dir_, [](std::string& bytes) { bytes[30] ^= 0x01; });
}

TEST_F(KernelCacheTest, EmptyEntryIsRecompiled) {
  expect_recompiled_after(dir_, [](std::string& bytes) { bytes.clear(); });
}

TEST_F(KernelCacheTest, AnotherKeysEntryIsNotLoaded) {
  KernelCache cache(dir_);
  const std::string key = KernelCache::key(test_kernels::kVectorAdd, {});
  cache.compile(test_kernels::kVectorAdd, {});
  const std::string other = std::string(64, 'a');
  fs::copy_file(cache.entry_path(key), cache.entry_path(other));
  bool corrupt = false;
  EXPECT_FALSE(cache.load(other, &corrupt).has_value());
  EXPECT_TRUE(corrupt);
}

TEST_F(KernelCacheTest, CompileErrorsAreNotCached) {
  KernelCache cache(dir_);
  EXPECT_THROW(cache.compile("this is not CUDA", {}), RuntimeError);
  EXPECT_TRUE(files_in(dir_ / "kernels").empty());
}

TEST_F(KernelCacheTest, TwoProcessesRacingOnOneKey) {
  int start[2];
  ASSERT_EQ(pipe(start), 0);
  pid_t children[2];
  for (pid_t& child : children) {
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(start[1]);
      char go = 0;
      if (read(start[0], &go, 1) != 1) _exit(10);
      try {
        CacheOutcome outcome = CacheOutcome::hit;
        const CompiledProgram program =
            KernelCache(dir_).compile(test_kernels::kRegisterPressure, {}, &outcome);
        const bool valid = is_elf(program.image) && program.kernels.contains("pressure") &&
                           read_cubin_kernels(program.image).size() == 2;
        _exit(valid ? 0 : 11);
      } catch (...) {
        _exit(12);
      }
    }
  }
  close(start[0]);
  // Both children wait on the pipe, so they compile and store at the same time.
  ASSERT_EQ(write(start[1], "go", 2), 2);
  close(start[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  const std::vector<fs::path> files = files_in(dir_ / "kernels");
  ASSERT_EQ(files.size(), 1u) << "one entry, no temporary files left";
  KernelCache cache(dir_);
  const std::string key = KernelCache::key(test_kernels::kRegisterPressure, {});
  EXPECT_EQ(files.front(), cache.entry_path(key));
  const std::optional<CompiledProgram> stored = cache.load(key);
  ASSERT_TRUE(stored.has_value());
  EXPECT_TRUE(stored->kernels.contains("trivial"));
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(KernelCacheDir, EnvironmentPrecedence) {
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv cache("COMFUSE_CACHE_DIR", "/tmp/explicit");
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(KernelCache::default_dir(), fs::path("/tmp/explicit"));
    EXPECT_EQ(KernelCache(fs::path("/tmp/argument")).dir(), fs::path("/tmp/argument"));
  }
  {
    ScopedEnv cache("COMFUSE_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(KernelCache::default_dir(), fs::path("/tmp/xdg/comfuse"));
  }
  {
    ScopedEnv cache("COMFUSE_CACHE_DIR", "");
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(KernelCache::default_dir(), fs::path("/home/someone/.cache/comfuse"));
    EXPECT_EQ(KernelCache().dir(), fs::path("/home/someone/.cache/comfuse"));
  }
}

}  // namespace
}  // namespace comfuse::runtime
