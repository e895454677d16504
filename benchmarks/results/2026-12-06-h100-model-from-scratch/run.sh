#!/usr/bin/env bash
# One call (nineteenth session, 2026-12-06, 23:21 UTC; an H200 was asked for, an H100 came). Builds nothing:
# NEW is tune_suite from a Release build of the tree committed as 8dfafc0 (the cost model's depth and staged
# inputs; its comments aside), OLD tune_suite from one of 86b7113 (before). Each searches three reducing rows
# from scratch, 24 trials, no start log.
set -uo pipefail
O=$1/scratch; mkdir -p $O
declare -A bin=([new]=${NEW:?tune_suite after the change} [old]=${OLD:?tune_suite before the change})
rows=post_rmsnorm_M8192_K4096_N4096,post_layernorm_M8192_K1024_N4096,gemm_softmax_M4096_K1024_N8192
for v in new old; do
  timeout 200 "${bin[$v]}" $O/$v --trials 24 --only "$rows" > $O/$v.txt 2>&1
done
for v in new old; do echo "== $v"; grep -hE " best " $O/$v.txt; done
