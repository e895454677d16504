#!/usr/bin/env bash
# The fused back-to-back kernel on the GPU machine, in one call: its GPU tests (MLPs and attention, one chunk at a
# time and overlapped), then tuning of the back-to-back suite rows (the two kernels and the fused one) appended to
# a copy of the shipped log (the two-kernel plans keep their shipped records), then bench_suite on those
# rows from that log, both plans side by side.
# Usage: benchmarks/run_b2b.sh OUTDIR   (build/ must hold the Release build: bench_suite, tune_suite, GPU tests)
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
outdir=$1
mkdir -p "$outdir"
cd "$(dirname "$0")/.."
rows=mlp_relu,mlp_gelu,attention,target_attention

COMFUSE_REQUIRE_GPU=1 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='B2B*' >"$outdir/gpu-tests.log" 2>&1 || {
  grep -E "Failure|rel_error|non_finite|FAILED" "$outdir/gpu-tests.log" | head -40
  echo "run_b2b: the GPU tests failed (log: $outdir/gpu-tests.log); nothing was tuned" >&2
  exit 1
}
echo "run_b2b: GPU tests passed"
./build/benchmarks/tune_suite "$outdir/tune" --only "$rows" --fused-only --trials 32 --seconds 40 >"$outdir/tune.txt" 2>&1 || true
cat tuning_logs/h200.jsonl "$outdir/tune/h200.jsonl" >"$outdir/h200-merged.jsonl"
./build/benchmarks/bench_suite "$outdir/b2b.json" --log "$outdir/h200-merged.jsonl" --only "$rows" --b2b-fused \
  >"$outdir/bench.txt" 2>&1 || true
cut -c1-140 "$outdir/tune.txt" | grep -v "^ *$"
cat "$outdir/bench.txt"
