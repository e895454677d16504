#!/usr/bin/env bash
# The call as run (sixteenth session, 2026-12-06 14:59 UTC; an H200 was asked for and an H100 came): after the
# rows step (results/2026-12-06-h100-whole-rows/), Change 64's trace A/B of four norm rows' winners, then its
# GPU-test variants of the post-LN, RMSNorm and row-max workloads.
# Builds nothing: the binaries under build/ are a Release build of 758272c (before the fix in 66c5e3e).
set -uo pipefail
O=$1/reduce; mkdir -p $O
rows=(post_layernorm_M16384_K1024_N1024 post_layernorm_M16384_K4096_N1024 post_layernorm_M8192_K1024_N4096
  post_rmsnorm_M8192_K4096_N4096)
timeout 170 benchmarks/trace_rows.sh --set finish_reductions=true --no-gpu-test $O/traces tuning_logs/h200.jsonl \
  "${rows[@]}" > $O/traces.log 2>&1
echo "traces exit $?"; tail -12 $O/traces/traces.txt
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=finish_reductions_ timeout 110 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*/post_layernorm:Workloads/FusedKernelGpuTest.*/post_rmsnorm:Workloads/FusedKernelGpuTest.*/swish_rowmax' \
  > $O/gpu-tests.log 2>&1
echo "variants exit $?: $(grep -c '^ok ' $O/gpu-tests.log) within the tolerance, $(grep -c '^FAIL \|Failure$' $O/gpu-tests.log) failures"
