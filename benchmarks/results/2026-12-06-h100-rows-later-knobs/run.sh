#!/usr/bin/env bash
# The call as run (eighteenth session, 2026-12-06, 20:32 UTC; an H200 was asked for and an H100 came), at
# 14b735b. Builds nothing: the binaries under build/ are a Release build of 20dd66a (the same sources).
set -uo pipefail
O=$1; mkdir -p "$O"
rows=post_rmsnorm_M8192_K4096_N4096,gemm_layernorm_relu_M8192_K4096_N4096
timeout 200 ./build/benchmarks/tune_suite "$O/tune" --trials 24 --only "$rows" \
  --fix bf16_stash=true,wide_finish=true,multicast_b=true > "$O/tune.txt" 2>&1
cp "$O/tune/h200.jsonl" "$O/records.jsonl"  # (named for the log it would join; the target in each is the H100)
cat tuning_logs/h200.jsonl "$O/records.jsonl" > "$O/merged.jsonl"
# The new winners (from merged.jsonl) and the shipped log's H200 winners, each replayed here beside cuBLAS.
timeout 90 ./build/benchmarks/bench_suite "$O/comfuse.json" --repeats 50 --only $rows,gemm_M8192_K4096_N4096 \
  --allow-target-mismatch --log "$O/merged.jsonl" > "$O/bench.txt" 2>&1
timeout 90 ./build/benchmarks/bench_suite "$O/old.json" --repeats 50 --only $rows --allow-target-mismatch \
  --log tuning_logs/h200.jsonl > "$O/bench-old.txt" 2>&1
timeout 200 python3 benchmarks/torch_baselines.py "$O/torch.json" --only $rows --compile-budget 150 > "$O/torch.txt" 2>&1
