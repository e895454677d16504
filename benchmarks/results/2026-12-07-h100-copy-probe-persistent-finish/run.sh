#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, 08:38-08:39 UTC; an H200 was asked for, an H100 came). Builds
# nothing: comfuse is a Release build of 9203028. The copy probe, row slices on three rows, and
# persistent_finish (Change 72) traced without and with the knob on the five K = 1024 winners (sched/, the
# H200 suite's). Usage: run.sh OUTDIR, from the repository's root.
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
start=$(date +%s); BUDGET=${BUDGET:-420}
B=./build/src/cli
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
timeout 90 python3 benchmarks/copy_probe.py > "$O/copy-probe.txt" 2>&1; echo "copy probe rc=$?" >> "$O/copy-probe.txt"
left() { echo $(( BUDGET - ($(date +%s) - start) )); }
tr() {  # out-name workload shape sched [args]
  local name=$1 w=$2 s=$3 sc=$4; shift 4
  local l=$(left); [ $l -lt 40 ] && { echo "skip $name" >> "$O/summary.txt"; return; }
  timeout $(( l < 120 ? l : 120 )) "$B/comfuse" trace "$w" --shape "$s" --repeats 20 --schedule "$(cat "$D/sched/$sc.json")" "$@" \
    > "$O/$name.txt" 2>&1
  echo "== $name rc=$?" >> "$O/summary.txt"; grep -E "^(check|time|kernels|slices)" "$O/$name.txt" >> "$O/summary.txt"
}
tr slices_postln_n1024 post_layernorm M=16384,K=1024,N=1024 postln_n1024 --row-slices 2,4
tr slices_softmax gemm_softmax M=4096,K=1024,N=8192 softmax --row-slices 2,4
tr slices_postln_n4096 post_layernorm M=8192,K=1024,N=4096 postln_n4096 --row-slices 2,4
tr base_softcap gemm_softcap_softmax M=4096,K=1024,N=8192 softcap
tr base_geluln gemm_gelu_layernorm M=16384,K=1024,N=4096 geluln
tr pf_postln_n1024 post_layernorm M=16384,K=1024,N=1024 postln_n1024 --set persistent_finish=true
tr pf_softmax gemm_softmax M=4096,K=1024,N=8192 softmax --set persistent_finish=true
tr pf_softcap gemm_softcap_softmax M=4096,K=1024,N=8192 softcap --set persistent_finish=true
tr pf_postln_n4096 post_layernorm M=8192,K=1024,N=4096 postln_n4096 --set persistent_finish=true
tr pf_geluln gemm_gelu_layernorm M=16384,K=1024,N=4096 geluln --set persistent_finish=true
cat "$O/copy-probe.txt" "$O/summary.txt"
