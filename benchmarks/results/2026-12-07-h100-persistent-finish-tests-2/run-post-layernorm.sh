#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, 09:34-09:38 UTC; an H200 was asked for, an H100 came). Builds
# nothing: a Release build of this session's tree. On an H200: the GEMM rows' refined search (device_plan.sh
# refined). On another card, as here: the rest of the persistent_finish GPU-test variants (post-LN, then the
# softcapped softmax, which the 200 s limit did not reach). Usage: run-post-layernorm.sh OUTDIR, from the root.
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$card" in
  *H200*)
    timeout 220 bash benchmarks/device_plan.sh refined "$O/plan" > "$O/plan.txt" 2>&1
    echo "rc=$?" >> "$O/plan.txt"
    cp "$O/plan/refined/merged.jsonl" "$O/merged.jsonl" 2>/dev/null
    cp "$O/plan/refined/tune.txt" "$O/plan/refined/bench.txt" "$O/" 2>/dev/null
    cp "$O/plan/refined/tune/tuning.jsonl" "$O/tuning.jsonl" 2>/dev/null
    cp "$O/plan/refined/bench.json" "$O/bench.json" 2>/dev/null
    rm -rf "$O/plan" "$O/merged.jsonl"
    tail -12 "$O/plan.txt" ;;
  *)
    f='Workloads/FusedKernelGpuTest.*/post_layernorm:Workloads/FusedKernelGpuTest.*/gemm_softcap_softmax'
    COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=persistent_finish_ timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests \
      --gtest_filter="$f" > "$O/gpu-tests.log" 2>&1
    echo "rc=$?" >> "$O/gpu-tests.log"
    grep -E "^\[ RUN|^\[       OK|FAILED|kernels, .* failures|^rc=" "$O/gpu-tests.log"
    echo "failures: $(grep -c '^FAIL \|Failure$' "$O/gpu-tests.log"), ok blocks: $(grep -c '^ok ' "$O/gpu-tests.log")" ;;
esac
