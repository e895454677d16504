#!/usr/bin/env bash
# The call as run (10:51 UTC, commit 472d7c1), called with OUTDIR as $1 from the repository root; an H200
# would have run `device_plan.sh owed` instead. Builds nothing: the binaries under build/ are a Release build
# of the tree as committed with it. Change 63 with the next row prefetched: the second quarter of its GPU-test variants, then the trace A/B.
set -uo pipefail
out=$1/resident2; mkdir -p $out
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=resident_finish_ COMFUSE_GPU_SHARD=1/4 timeout 200 \
  ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $out/gpu-tests-resident_finish.log 2>&1
echo "resident_finish_ shard 1/4: exit $? ok $(grep -c '^ok ' $out/gpu-tests-resident_finish.log) fail $(grep -c '^FAIL \|Failure$' $out/gpu-tests-resident_finish.log)"
benchmarks/trace_rows.sh --set resident_finish=true --no-gpu-test $out/traces tuning_logs/h200.jsonl \
  post_layernorm_M16384_K1024_N1024 post_layernorm_M8192_K1024_N4096 gemm_gelu_layernorm_M16384_K1024_N4096 2>&1 | tail -9
for f in $out/traces/*.txt; do echo "$(basename $f): $(grep -E '^(kernels|time|CTAs|SM clock)' $f | tr '\n' ' ')"; done | grep -v timeline
