#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, 08:31-08:37 UTC, two calls on one H100; no kind was named).
# Builds nothing: the binaries are a Release build of 9203028, stripped and carried as a tarball. The
# schedules are the H200 winners of `../2026-12-06-h200-started-searches/comfuse.json`, in sched/.
# Usage: run.sh OUTDIR
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O/tests"
cd "$D/../../.."
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/device.txt" 2>&1
date -u >> "$O/device.txt"
row() {  # name workload shape slices
  timeout 120 ./build/src/cli/comfuse trace "$2" --shape "$3" --repeats 20 --row-slices "$4" \
    --schedule "$(cat "$D/sched/$1.json")" > "$O/$1.txt" 2>&1
  echo "== $1 rc=$?" >> "$O/summary.txt"; grep -E "^(check|time|kernels|slices)" "$O/$1.txt" >> "$O/summary.txt"
}
# First call: the five rows, then the row-slice GPU test.
row postln_n1024 post_layernorm M=16384,K=1024,N=1024 2,4,8
row softmax gemm_softmax M=4096,K=1024,N=8192 2,4
row geluln gemm_gelu_layernorm M=16384,K=1024,N=4096 4,8
row postln_n4096 post_layernorm M=8192,K=1024,N=4096 2,4
row softcap gemm_softcap_softmax M=4096,K=1024,N=8192 4
COMFUSE_REQUIRE_GPU=1 timeout 100 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='RowSlices*' \
  > "$O/tests/gpu-tests-row-slices.log" 2>&1
# Second call: the persistent_finish_ variants (the masked softmax's at M = 20000 among them), 200 s limit.
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=persistent_finish_ timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter='Workloads/FusedKernelGpuTest.*' > "$O/tests/gpu-tests-persistent_finish.log" 2>&1
cat "$O/summary.txt"
