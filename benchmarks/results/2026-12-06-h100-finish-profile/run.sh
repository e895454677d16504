#!/usr/bin/env bash
# The two calls as run, on H100s where an H200 was asked for. Builds nothing: the binaries under build/ are a
# Release build of the tree as committed with this folder (the knob finish_full_occupancy, Change 60, exists in
# that commit only; the next commit takes it out).
set -uo pipefail
# 08:34 UTC: the finish kernels of three shipped H200 winners, replayed on this card and profiled.
for row in gemm_gelu_layernorm_M16384_K1024_N4096 gemm_softmax_M4096_K1024_N8192 post_layernorm_M16384_K1024_N1024; do
  timeout 150 benchmarks/profile_row.sh --allow-target-mismatch "$1/finish" tuning_logs/h200.jsonl $row '_finish$'
done
rm -f "$1"/finish/*.ncu-rep
# 08:40 UTC: Change 60's GPU-test variants, then two rounds of traces of four winners with it set.
d=$1/occupancy; mkdir -p $d
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=finish_full_occupancy_ timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*' > $d/gpu-tests-finish_full_occupancy.log 2>&1
for r in 1 2; do
  benchmarks/trace_rows.sh --set finish_full_occupancy=true --no-gpu-test $d/round-$r tuning_logs/h200.jsonl \
    gemm_softmax_M4096_K1024_N8192 gemm_softcap_softmax_M4096_K1024_N8192 post_layernorm_M16384_K1024_N1024 \
    gemm_gelu_layernorm_M16384_K1024_N4096
done
