#!/usr/bin/env bash
# The step as run (sixteenth session, 2026-12-06 15:31 UTC; an H200 was asked for and an H100 came), at 819f987.
# Builds nothing: the binaries under build/ are a Release build of that tree.
# After the fix of the finish kernel's first walk with batched reads, and Change 66 (the row kept in registers
# between the walks): every finish_reductions_ GPU-test variant of the post-LN, RMSNorm and row-max workloads
# again, then the trace A/B of four norm rows' winners with finish_reductions.
set -uo pipefail
O=$1/recheck; mkdir -p $O
rows=(post_layernorm_M16384_K1024_N1024 post_layernorm_M16384_K4096_N1024 post_layernorm_M8192_K1024_N4096 post_rmsnorm_M8192_K4096_N4096)
timeout ${TRACE_LIMIT:-200} benchmarks/trace_rows.sh --set finish_reductions=true --no-gpu-test $O/traces tuning_logs/h200.jsonl "${rows[@]}" > $O/traces.log 2>&1
echo "traces exit $?"; tail -12 $O/traces/traces.txt 2>/dev/null || tail -20 $O/traces.log
grep -h '^kernels' $O/traces/*.txt
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=finish_reductions_ timeout ${VARIANT_LIMIT:-170} ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*/post_layernorm:Workloads/FusedKernelGpuTest.*/post_rmsnorm:Workloads/FusedKernelGpuTest.*/swish_rowmax' > $O/gpu-tests.log 2>&1
echo "variants exit $?: $(grep -c '^ok ' $O/gpu-tests.log) within the tolerance, $(grep -c '^FAIL \|Failure$' $O/gpu-tests.log) failures"
