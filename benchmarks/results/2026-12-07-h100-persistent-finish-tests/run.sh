#!/usr/bin/env bash
# What ran (twentieth session, 2026-12-07, 01:19-01:23 UTC; an H200 was asked for, an H100 came). Builds
# nothing: the binaries are a Release build of e5bf51e (persistent_finish). The call also ran a copy probe,
# `comfuse trace` A/Bs and bench_suite; those failed or measured nothing usable on this card (README), so only
# the tests are kept here.
set -uo pipefail
OUT=$1
COMFUSE_REQUIRE_GPU=1 timeout 60 ./build/tests/runtime/runtime_gpu_tests --gtest_filter='LaunchTest.MaxActive*' \
  > "$OUT/runtime-tests.log" 2>&1
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=persistent_finish_ timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*' > "$OUT/gpu-tests-persistent_finish.log" 2>&1
