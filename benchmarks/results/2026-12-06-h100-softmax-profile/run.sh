#!/usr/bin/env bash
# The call as run (2026-12-06, 08:24 UTC, an H100 where an H200 was asked for). Builds nothing: the binaries
# under build/ are a Release build of the tree as committed with this folder. The shipped H200 winners of the
# two softmax rows are replayed on this card (--allow-target-mismatch) and their main kernels profiled.
set -uo pipefail
for row in gemm_softmax_M4096_K1024_N8192 gemm_softcap_softmax_M4096_K1024_N8192; do
  timeout 200 benchmarks/profile_row.sh --allow-target-mismatch "$1/profile" tuning_logs/h200.jsonl $row \
    'comfuse_mm_[0-9a-f]+$'
done
rm -f "$1"/profile/*.ncu-rep
