#!/usr/bin/env bash
# The call as run (2026-12-06, 08:26 UTC, an H100 where an H200 was asked for). Builds nothing: the binaries
# under build/ are a Release build of the tree as committed with this folder. The suite's four GEMM rows
# searched on this card with the refinements on (Change 59; tune_suite writes h200.jsonl whatever the card:
# its records are records-h100.jsonl here), beside the shipped H200 winners replayed on this card before and
# after (shipped, shipped2).
set -uo pipefail
d=$1/refined_ab; mkdir -p $d
rows=gemm_M16384_K1024_N1024,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096,gemm_M8192_K8192_N8192
timeout 330 ./build/benchmarks/tune_suite $d/tune --trials 12 --only $rows > $d/tune.txt 2>&1
./build/benchmarks/bench_suite $d/shipped.json --repeats 50 --only $rows --log tuning_logs/h200.jsonl \
  --allow-target-mismatch > $d/shipped.txt 2>&1
./build/benchmarks/bench_suite $d/refined.json --repeats 50 --only $rows --log $d/tune/h200.jsonl > $d/refined.txt 2>&1
./build/benchmarks/bench_suite $d/shipped2.json --repeats 50 --only $rows --log tuning_logs/h200.jsonl \
  --allow-target-mismatch > $d/shipped2.txt 2>&1

# The second call (08:29 UTC, another H100): the refined winners of records-h100.jsonl traced as they are and
# without the refinements (the `.set` kernels), two interleaved rounds (iso-1, iso-2).
rows=(gemm_M16384_K1024_N1024 gemm_M16384_K4096_N1024 gemm_M8192_K4096_N4096 gemm_M8192_K8192_N8192)
for r in 1 2; do
  benchmarks/trace_rows.sh --set packed_rounding=false,shared_pointers=false --no-gpu-test "$1/iso-$r" \
    benchmarks/results/2026-12-06-h100-refined-gemm/records-h100.jsonl "${rows[@]}"
done
