// On a GPU: launches and read-back, large dynamic shared memory, clusters exchanging data through distributed
// shared memory, resource usage against the driver's, cached cubins, the fingerprint.
#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "runtime/fingerprint.h"
#include "runtime/gpu_test_guard.h"
#include "runtime/kernel_cache.h"
#include "runtime/module.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/test_kernels.h"
#include "support/error.h"

namespace comfuse::runtime {
namespace {

using LaunchTest = gpu_test::GpuTest;

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (float& value : values) value = uniform(rng);
  return values;
}

TEST_F(LaunchTest, LaunchAndReadBack) {
  const CompiledProgram program = compile(test_kernels::kVectorAdd);
  Module module(context(), program.image);
  const Function kernel = module.function("vector_add");
  std::mt19937 rng(std::random_device{}());
  const int n = 1000003;  // Not a multiple of the block: the tail is guarded.
  const std::vector<float> a = random_floats(n, rng);
  const std::vector<float> b = random_floats(n, rng);
  DeviceBuffer da(context(), n * sizeof(float));
  DeviceBuffer db(context(), n * sizeof(float));
  DeviceBuffer dout(context(), (n + 64) * sizeof(float));
  da.upload<float>(a);
  db.upload<float>(b);
  dout.fill_bytes(0xff);  // NaN everywhere: an unwritten element cannot pass.
  Stream stream(context());
  LaunchConfig config;
  config.grid.x = (n + 255) / 256;
  config.block.x = 256;
  config.stream = stream.get();
  launch(kernel, config, dout.get(), da.get(), db.get(), n);
  stream.synchronize();
  const std::vector<float> out = dout.download<float>(n + 64);
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a[i] + b[i]) << "element " << i;
  for (int i = n; i < n + 64; ++i)
    ASSERT_TRUE(std::isnan(out[i])) << "element " << i << " past the end was written";
}

TEST_F(LaunchTest, FillsAndUploadsHaveLandedBeforeALaunchOnAnotherStream) {
  // A fill and an upload of device memory run on the legacy stream, which orders nothing on a non-blocking
  // stream: the kernel launched right after them there must still see every byte. 1 GiB and 256 MiB take
  // hundreds of microseconds; the kernel reads their last words a launch later.
  const CompiledProgram program = compile(test_kernels::kVectorAdd);
  Module module(context(), program.image);
  const Function kernel = module.function("vector_add");
  const std::size_t fill_bytes = std::size_t{1} << 30, upload_floats = std::size_t{1} << 26;
  const int n = 1024;
  DeviceBuffer filled(context(), fill_bytes), uploaded(context(), upload_floats * sizeof(float));
  DeviceBuffer out_fill(context(), n * sizeof(float)), out_upload(context(), n * sizeof(float));
  DeviceBuffer zeros(context(), n * sizeof(float));
  zeros.fill_bytes(0);
  filled.fill_bytes(0);
  const std::vector<float> pattern(upload_floats, 3.5f);
  Stream stream(context());
  LaunchConfig config;
  config.grid.x = (n + 255) / 256;
  config.block.x = 256;
  config.stream = stream.get();
  filled.fill_bytes(0x40);  // 3.0039 in every float
  launch(kernel, config, out_fill.get(), filled.get() + fill_bytes - n * sizeof(float), zeros.get(), n);
  uploaded.upload<float>(pattern);
  launch(kernel, config, out_upload.get(), uploaded.get() + (upload_floats - n) * sizeof(float), zeros.get(),
         n);
  stream.synchronize();
  EXPECT_EQ(out_fill.download<float>(n), std::vector<float>(n, std::bit_cast<float>(0x40404040u)));
  EXPECT_EQ(out_upload.download<float>(n), std::vector<float>(n, 3.5f));
}

TEST_F(LaunchTest, DynamicSharedMemoryAbove48KB) {
  const CompiledProgram program = compile(test_kernels::kDynamicShared);
  Module module(context(), program.image);
  const Function kernel = module.function("dynamic_shared");
  const int optin = context().attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  const unsigned bytes = 200 * 1024;
  ASSERT_GE(optin, static_cast<int>(bytes));
  const unsigned words = bytes / 4;
  const unsigned blocks = 264;
  const unsigned threads = 256;
  const unsigned seed = std::random_device{}();
  DeviceBuffer dout(context(), blocks * threads * sizeof(unsigned));
  dout.fill_bytes(0xa5);
  LaunchConfig config;
  config.grid.x = blocks;
  config.block.x = threads;
  config.dynamic_shared_bytes = bytes;
  launch(kernel, config, dout.get(), words, seed);
  context().synchronize();
  const std::vector<unsigned> out = dout.download<unsigned>(blocks * threads);
  for (unsigned t = 0; t < threads; ++t) {
    unsigned expected = 0;
    for (unsigned w = t; w < words; w += threads) expected += (words - 1 - w) * 2654435761u + seed;
    for (unsigned block = 0; block < blocks; ++block) {
      ASSERT_EQ(out[block * threads + t], expected) << "block " << block << " thread " << t;
    }
  }

  // Beyond the opt-in limit the driver refuses, and the error names the call.
  config.dynamic_shared_bytes = static_cast<unsigned>(optin) + 1024;
  try {
    launch(kernel, config, dout.get(), words, seed);
    FAIL() << "launched with more shared memory than the device has";
  } catch (const RuntimeError& error) {
    EXPECT_TRUE(error.api() == "cuFuncSetAttribute" || error.api() == "cuLaunchKernelEx") << error.what();
  }
}

TEST_F(LaunchTest, ClustersExchangeThroughDistributedSharedMemory) {
  const CompiledProgram program = compile(test_kernels::kClusterExchange);
  Module module(context(), program.image);
  const Function kernel = module.function("cluster_exchange");
  for (unsigned cluster : {2u, 4u, 8u, 16u}) {
    SCOPED_TRACE("cluster of " + std::to_string(cluster));
    const unsigned blocks = cluster * 33;
    DeviceBuffer dout(context(), 2 * blocks * sizeof(unsigned));
    dout.fill_bytes(0xff);
    LaunchConfig config;
    config.grid.x = blocks;
    config.block.x = 128;
    config.cluster.x = cluster;
    launch(kernel, config, dout.get());
    context().synchronize();
    const std::vector<unsigned> out = dout.download<unsigned>(2 * blocks);
    for (unsigned block = 0; block < blocks; ++block) {
      const unsigned first = block / cluster * cluster;
      const unsigned peer = first + (block - first + 1) % cluster;
      ASSERT_EQ(out[2 * block], peer * 1000u + 7u) << "block " << block;
      ASSERT_EQ(out[2 * block + 1], cluster) << "block " << block;
    }
  }
}

TEST_F(LaunchTest, MaxActiveClustersFitTheMultiprocessors) {
  const CompiledProgram program = compile(test_kernels::kClusterExchange);
  Module module(context(), program.image);
  const Function kernel = module.function("cluster_exchange");
  const int sms = context().attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  for (unsigned cluster : {2u, 4u, 8u}) {
    SCOPED_TRACE("cluster of " + std::to_string(cluster));
    LaunchConfig config;
    config.block.x = 128;
    config.cluster.x = cluster;
    config.dynamic_shared_bytes = 200 * 1024;  // one block an SM
    const int clusters = max_active_clusters(kernel, config);
    std::cout << "cluster of " << cluster << ": " << clusters << " at once on " << sms << " SMs\n";
    EXPECT_LE(clusters * static_cast<int>(cluster), sms);
    EXPECT_GE(clusters * static_cast<int>(cluster), sms / 2);
    // Then that many clusters run correctly in one launch.
    const unsigned blocks = static_cast<unsigned>(clusters) * cluster;
    DeviceBuffer dout(context(), 2 * blocks * sizeof(unsigned));
    dout.fill_bytes(0xff);
    config.grid.x = blocks;
    launch(kernel, config, dout.get());
    context().synchronize();
    const std::vector<unsigned> out = dout.download<unsigned>(2 * blocks);
    for (unsigned block = 0; block < blocks; ++block)
      ASSERT_EQ(out[2 * block + 1], cluster) << "block " << block;
  }
}

TEST_F(LaunchTest, MaxActiveBlocksFollowTheirSharedMemory) {
  const CompiledProgram program = compile(test_kernels::kDynamicShared);
  Module module(context(), program.image);
  const Function kernel = module.function("dynamic_shared");
  LaunchConfig config;
  config.block.x = 256;
  // Shared memory decides: one block of 200 KB an SM (227 KB in all), two of 100 KB; with 20 KB the
  // threads do (2048 an SM: eight blocks of 256 at most).
  config.dynamic_shared_bytes = 200 * 1024;
  EXPECT_EQ(max_active_blocks_per_multiprocessor(kernel, config), 1);
  config.dynamic_shared_bytes = 100 * 1024;
  EXPECT_EQ(max_active_blocks_per_multiprocessor(kernel, config), 2);
  config.dynamic_shared_bytes = 20 * 1024;
  const int blocks = max_active_blocks_per_multiprocessor(kernel, config);
  EXPECT_GE(blocks, 3);
  EXPECT_LE(blocks, 8);
}

TEST_F(LaunchTest, ClusterMustDivideTheGrid) {
  const CompiledProgram program = compile(test_kernels::kClusterExchange);
  Module module(context(), program.image);
  const Function kernel = module.function("cluster_exchange");
  DeviceBuffer dout(context(), 64);
  LaunchConfig config;
  config.grid.x = 6;
  config.block.x = 128;
  config.cluster.x = 4;
  try {
    launch(kernel, config, dout.get());
    FAIL() << "launched a grid that is not a multiple of its cluster";
  } catch (const CompileError& error) {
    EXPECT_EQ(std::string(error.what()),
              "launch of 'cluster_exchange': grid 6x1x1 is not a multiple of cluster 4x1x1");
  }
}

TEST_F(LaunchTest, ResourceUsageMatchesTheDriver) {
  CompileOptions options;
  options.extra = {"--maxrregcount=32"};
  const CompiledProgram program = compile(test_kernels::kRegisterPressure, options);
  Module module(context(), program.image);
  for (const auto& [name, usage] : program.kernels) {
    SCOPED_TRACE(name);
    const Function kernel = module.function(name);
    EXPECT_EQ(kernel.attribute(CU_FUNC_ATTRIBUTE_NUM_REGS), usage.registers);
    EXPECT_EQ(kernel.attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES), usage.static_shared_bytes);
    EXPECT_EQ(kernel.attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES), usage.stack_frame_bytes);
  }
}

TEST_F(LaunchTest, BadImagesAndNamesNameTheCall) {
  try {
    Module module(context(), "this is neither a cubin nor PTX");
    FAIL() << "loaded garbage";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.api(), "cuModuleLoadData");
  }
  const CompiledProgram program = compile(test_kernels::kVectorAdd);
  Module module(context(), program.image);
  try {
    module.function("no_such_kernel");
    FAIL() << "found a kernel that does not exist";
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.api(), "cuModuleGetFunction");
    EXPECT_NE(std::string(error.what()).find("'no_such_kernel'"), std::string::npos) << error.what();
  }
}

TEST_F(LaunchTest, CachedCubinRuns) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("comfuse-gpu-cache-" + std::to_string(getpid()));
  KernelCache cache(dir);
  CacheOutcome outcome = CacheOutcome::hit;
  cache.compile(test_kernels::kVectorAdd, {}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::miss);
  const CompiledProgram program = cache.compile(test_kernels::kVectorAdd, {}, &outcome);
  EXPECT_EQ(outcome, CacheOutcome::hit);
  Module module(context(), program.image);
  const Function kernel = module.function("vector_add");
  const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  DeviceBuffer da(context(), 12), db(context(), 12), dout(context(), 12);
  da.upload<float>(a);
  db.upload<float>(b);
  dout.fill_bytes(0xff);
  LaunchConfig config;
  config.block.x = 32;
  launch(kernel, config, dout.get(), da.get(), db.get(), 3);
  context().synchronize();
  EXPECT_EQ(dout.download<float>(3), (std::vector<float>{11, 22, 33}));
  std::filesystem::remove_all(dir);
}

// Uses the guard macro rather than the fixture, as tests outside a GpuTest fixture do.
TEST(ContextTest, ContextsOfOneDeviceShareItsPrimaryContext) {
  COMFUSE_GPU_TEST_GUARD();
  Context first(0);
  Context second(0);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_EQ(first.device(), second.device());
  Context moved(std::move(first));
  EXPECT_EQ(moved.get(), second.get());
  DeviceBuffer buffer(moved, 256);
  buffer.fill_bytes(0x5a);
  EXPECT_EQ(buffer.download<unsigned char>(256), std::vector<unsigned char>(256, 0x5a));
  try {
    Context missing(second.driver().device_count());
    FAIL() << "made a context on a device that does not exist";
  } catch (const NoCudaDeviceError& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with("no CUDA device: device ")) << error.what();
  }
}

TEST_F(LaunchTest, FingerprintOfTheDevice) {
  const DeviceFingerprint fingerprint = read_fingerprint(0);
  EXPECT_FALSE(fingerprint.name.empty());
  EXPECT_GT(fingerprint.sms, 0);
  EXPECT_GT(fingerprint.memory_bytes, 0);
  EXPECT_GT(fingerprint.l2_bytes, 0);
  EXPECT_GT(fingerprint.sm_clock_khz, 0);
  EXPECT_EQ(fingerprint.uuid.size(), 40u) << fingerprint.uuid;
  EXPECT_EQ(fingerprint.arch, arch_for(fingerprint.cc_major, fingerprint.cc_minor));
  EXPECT_EQ(fingerprint.sms, context().attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  const nlohmann::json json = fingerprint_to_json(fingerprint);
  EXPECT_EQ(fingerprint_from_json(nlohmann::json::parse(json.dump())), fingerprint);
  std::cout << "fingerprint of device 0:\n" << describe(fingerprint) << json.dump(2) << "\n";
}

}  // namespace
}  // namespace comfuse::runtime
