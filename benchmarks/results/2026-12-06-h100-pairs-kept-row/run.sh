#!/usr/bin/env bash
# The call as run (seventeenth session, 2026-12-06 18:28 UTC; an H200 was asked for and an H100 came), at
# ba57408. Builds nothing: the binaries under build/ are a Release build of that tree.
# Change 67 (the finish kernel's pairs walk keeps its row in registers): the trace A/B of RMSNorm's and
# LN-relu's winners with finish_reductions, then every finish_reductions_ GPU-test variant.
set -uo pipefail
O=$1/variants; mkdir -p $O
timeout 110 benchmarks/trace_rows.sh --set finish_reductions=true --no-gpu-test $O/traces tuning_logs/h200.jsonl \
  post_rmsnorm_M8192_K4096_N4096 gemm_layernorm_relu_M8192_K4096_N4096 > $O/traces.log 2>&1
grep -h '^kernels' $O/traces/*.txt
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=finish_reductions_ timeout 150 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*' > $O/gpu-tests.log 2>&1
echo "variants exit $?: $(grep -c '^ok ' $O/gpu-tests.log) within the tolerance, $(grep -c '^FAIL \|Failure$' $O/gpu-tests.log) failures"
