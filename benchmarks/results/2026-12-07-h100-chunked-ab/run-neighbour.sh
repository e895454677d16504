#!/usr/bin/env bash
# A later call (twenty-fifth session, 2026-12-07, 15:22 UTC, an H100 by name). Builds nothing: tune_suite is a
# Release build of f75a0f1 (Change 76: the chunks and the stage they free as one neighbour), unpacked at its
# build/ path. The softmax N = 8192 row from scratch, 24 trials.
set -u
OUT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
timeout 150 ./build/benchmarks/tune_suite "$OUT/softmax24" --trials 24 --only gemm_softmax_M4096_K1024_N8192 \
  >"$OUT/softmax24.txt" 2>&1
grep ' best ' "$OUT/softmax24.txt"
