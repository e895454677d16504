#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, 09:20-09:27 UTC, one H100; no kind named). Builds nothing:
# codegen_gpu_tests is a Release build of this session's tree (the kernels as at 9203028). The
# persistent_finish_ GPU-test variants of the workloads the twentieth session's run did not reach.
# Usage: run.sh OUTDIR, from the repository's root.
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
f='Workloads/FusedKernelGpuTest.*/gemm_gelu_layernorm:Workloads/FusedKernelGpuTest.*/gemm_softmax*'
f+=':Workloads/FusedKernelGpuTest.*/post_layernorm*:Workloads/FusedKernelGpuTest.*/gemm_softcap_softmax*'
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=persistent_finish_ timeout 420 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter="$f" \
  > "$O/gpu-tests.log" 2>&1
echo "rc=$?" >> "$O/gpu-tests.log"
grep -E "^\[ RUN|^\[       OK|FAILED|kernels, .* failures|^rc=" "$O/gpu-tests.log"
