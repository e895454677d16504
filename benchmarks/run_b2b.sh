#!/usr/bin/env bash
# The fused back-to-back kernel on the GPU machine, in one call: its GPU tests (MLPs and attention, every way of
# running chunks), then tuning of the fused kernels of the back-to-back suite rows appended to a copy of the
# shipped log (the two-kernel plans keep their shipped records), then bench_suite on those rows from that log
# (both plans side by side), the PyTorch baselines of the same rows, and the merged report.
# Usage: benchmarks/run_b2b.sh OUTDIR   (build/ must hold the Release build: bench_suite, tune_suite, GPU tests)
# COMFUSE_TORCH_COMPILE_BUDGET=S: PyTorch rows starting after S seconds are not compiled (default 240);
# COMFUSE_TORCH_TIMEOUT=S stops the baselines after S seconds (default 330): the rows done so far are kept.
# COMFUSE_B2B_GPU_TESTS=PATTERN: the GPU tests to run first (a gtest filter, default every B2B one: ~30 s on the
# H200, every kernel compiled in parallel first). The whole run took ~440 s of one 600 s call on 2026-12-03.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$1"
outdir=$(realpath "$1")
cd "$(dirname "$0")/.."
rows=mlp_relu,mlp_gelu,attention,target_attention

# A hang (a kernel that never finishes) fails the tests after 300 s instead of spending the whole call.
COMFUSE_REQUIRE_GPU=1 timeout 300 ./build/tests/codegen/gpu/codegen_gpu_tests \
  --gtest_filter="${COMFUSE_B2B_GPU_TESTS:-B2B*}" >"$outdir/gpu-tests.log" 2>&1 || {
  grep -E "Failure|rel_error|non_finite|FAILED|Trace|b2b bm" "$outdir/gpu-tests.log" | head -60
  echo "run_b2b: the GPU tests failed (log: $outdir/gpu-tests.log); nothing was tuned" >&2
  exit 1
}
echo "run_b2b: GPU tests passed"
./build/benchmarks/tune_suite "$outdir/tune" --only "$rows" --fused-only --trials 32 --seconds 40 >"$outdir/tune.txt" 2>&1 || true
cat tuning_logs/h200.jsonl "$outdir/tune/tuning.jsonl" >"$outdir/h200-merged.jsonl"
./build/benchmarks/bench_suite "$outdir/comfuse.json" --log "$outdir/h200-merged.jsonl" --only "$rows" --b2b-fused \
  >"$outdir/bench.txt" 2>&1 || true
cut -c1-140 "$outdir/tune.txt" | grep -v "^ *$"
cat "$outdir/bench.txt"
# The rows the targets compare with Inductor first (target attention, the small MLPs): a budget may cut the rest.
timeout "${COMFUSE_TORCH_TIMEOUT:-330}" python3 benchmarks/torch_baselines.py "$outdir/torch.json" \
  --only target_attention,mlp_relu_M65536,mlp_gelu_M65536,attention,mlp \
  --compile-budget "${COMFUSE_TORCH_COMPILE_BUDGET:-240}" >"$outdir/torch.txt" 2>&1 || true
prefix="$outdir/$(date -u +%F)-h200-b2b"
python3 benchmarks/report.py --comfuse "$outdir/comfuse.json" --torch "$outdir/torch.json" \
  --out-prefix "$prefix" --tune-log "$outdir/h200-merged.jsonl" >"$outdir/report.txt" 2>&1 || true
if [[ -f $prefix.md ]]; then
  grep -E "^\|" "$prefix.md" | cut -c1-200
else
  tail -20 "$outdir/torch.txt" "$outdir/report.txt"
fi
