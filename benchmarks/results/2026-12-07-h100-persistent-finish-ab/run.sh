#!/usr/bin/env bash
# One call (twenty-first session, 2026-12-07, 05:06 UTC; an H200 was asked for, an H100 came). Builds nothing:
# tune_suite is from a Release build of main at 3906048 (its code as at 9d13b69) with one line of
# search/search_space.cc changed so that the search keeps persistent_finish where a finish kernel runs
# (canonical_form: `if (!s.deferred()) s.persistent_finish = false;` in place of
# `s.persistent_finish = false;`), which --ab needs to find the twin. Each row: its fastest schedule in
# tuning_logs/h200.jsonl and that schedule with persistent_finish, two trials.
set -uo pipefail
OUT=$1
ab() {  # NAME ROWS
  timeout 90 ./build/benchmarks/tune_suite "$OUT/$1" --trials 2 --only "$2" --ab persistent_finish \
    --ab-log tuning_logs/h200.jsonl >"$OUT/$1.txt" 2>"$OUT/$1.err"
}
ab ab1 post_layernorm_M16384_K1024_N1024,gemm_softmax_M4096_K1024_N8192
ab ab2 gemm_softcap_softmax_M4096_K1024_N8192,post_layernorm_M8192_K1024_N4096,gemm_gelu_layernorm_M16384_K1024_N4096
