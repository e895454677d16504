#!/usr/bin/env bash
# The call as run (2026-12-06, 08:56 UTC, an H100 where an H200 was asked for). Builds nothing: the binaries
# under build/ are a Release build of the tree as committed with this folder (the knob finish_prefetch,
# Change 61, exists in that commit only; the next commit takes it out).
set -uo pipefail
d=$1/prefetch; mkdir -p $d
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=finish_prefetch_ timeout 140 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*' > $d/gpu-tests-finish_prefetch.log 2>&1
rows=(post_layernorm_M16384_K1024_N1024 gemm_softmax_M4096_K1024_N8192 gemm_gelu_layernorm_M16384_K1024_N4096)
for r in 1 2; do
  [[ $r == 2 ]] && rows=(post_layernorm_M16384_K1024_N1024 gemm_softmax_M4096_K1024_N8192)
  benchmarks/trace_rows.sh --set finish_prefetch=true --no-gpu-test $d/round-$r tuning_logs/h200.jsonl "${rows[@]}"
done
