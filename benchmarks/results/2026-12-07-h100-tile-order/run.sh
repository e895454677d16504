#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, 09:17 UTC, one H100; no kind named). Builds nothing: comfuse is
# a Release build of 9203028. The tile order A/B of the five K = 1024 winners (sched/): raster_group_m 8
# (shipped), 1, 4. Usage: run.sh OUTDIR, from the repository's root.
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
B=./build/src/cli
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
for r in postln_n1024:post_layernorm:M=16384,K=1024,N=1024 postln_n4096:post_layernorm:M=8192,K=1024,N=4096 \
         softmax:gemm_softmax:M=4096,K=1024,N=8192 softcap:gemm_softcap_softmax:M=4096,K=1024,N=8192 \
         geluln:gemm_gelu_layernorm:M=16384,K=1024,N=4096; do
  IFS=: read name w shape <<< "$r"
  for g in 8 1 4; do
    timeout 60 "$B/comfuse" trace "$w" --shape "$shape" --repeats 20 --schedule "$(cat "$D/sched/$name.json")" \
      --set raster_group_m=$g > "$O/t.txt" 2>&1
    rc=$?
    echo "$name G=$g rc=$rc $(grep -E '^check' "$O/t.txt" | cut -c1-40) | $(grep -E '^time' "$O/t.txt" | grep -o 'untraced [0-9.]* us') | $(grep -E '^kernels' "$O/t.txt" | cut -c12-)" >> "$O/summary.txt"
    cat "$O/t.txt" >> "$O/all.txt"
  done
done
rm -f "$O/t.txt"; cat "$O/summary.txt"
