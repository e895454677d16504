#!/usr/bin/env bash
# The README's main job. With a GPU: tune the post-LayerNorm workload at its default shape and report the
# winner against cuBLAS GEMM alone. Without one: replay the shipped H200 tuning log into the same workload's
# kernel (.cu and .cubin), and into the fused back-to-back kernel of causal attention (GEMM → online softmax →
# GEMM, the plan the log's measurements choose), and say what was built.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
comfuse=./build/src/cli/comfuse
out=build/demo
mkdir -p "$out"
$comfuse show post_layernorm
echo
if $comfuse devices > "$out/devices.txt" 2>&1; then
  cat "$out/devices.txt"
  echo "== tuning post_layernorm on this GPU (log: $out/post_layernorm.jsonl)"
  $comfuse tune post_layernorm --trials 32 --log "$out/post_layernorm.jsonl"
else
  echo "== no GPU here ($(tail -n 1 "$out/devices.txt"))"
  echo "== replaying the shipped H200 tuning log instead"
  $comfuse replay --log tuning_logs/h200.jsonl post_layernorm --target "NVIDIA H200" -o "$out/post_layernorm"
  echo
  $comfuse replay --log tuning_logs/h200.jsonl attention --shape BH=64,L=2048,D=128,CAUSAL=1 \
    --target "NVIDIA H200" -o "$out/attention"
  echo "== built:"
  ls -l "$out/post_layernorm" "$out/attention"
fi
