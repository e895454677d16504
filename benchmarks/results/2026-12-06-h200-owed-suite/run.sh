#!/usr/bin/env bash
# The two calls as run (eighteenth session, 2026-12-06, 20:10 and 20:13 UTC, one H200), at 20dd66a. Builds
# nothing: the binaries under build/ are a Release build of that tree. The first call's records are the last
# 93 lines of tuning_logs/h200.jsonl as committed with this folder; the second call replayed the log with them
# (its report names it merged.jsonl, the same bytes: sha256 045c0910…).
set -uo pipefail
O=$1; mkdir -p "$O/tunes" "$O/s"
post_ln=post_layernorm_M16384_K1024_N1024,post_layernorm_M16384_K4096_N1024
post_ln+=,post_layernorm_M8192_K1024_N4096,post_layernorm_M8192_K4096_N4096
gelu=gemm_gelu_layernorm_M16384_K1024_N4096
softmax=gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192,gemm_softmax_M4096_K4096_N32000
log=tuning_logs/h200.jsonl  # as it was before this folder's records
# First call: the owed searches (finish_reductions A/B of the post-LN winners; gelu-LN and softmax fixed forms).
timeout 200 ./build/benchmarks/tune_suite "$O/tunes/ab" --trials 2 --only "$post_ln" --ab finish_reductions \
  --ab-log $log > "$O/tunes/ab.txt" 2>&1
cat $log "$O/tunes/ab/h200.jsonl" > "$O/merged.jsonl"
timeout 160 ./build/benchmarks/tune_suite "$O/tunes/gelu" --trials 24 --only "$gelu" \
  --fix bf16_stash=true,wide_finish=true > "$O/tunes/gelu.txt" 2>&1
cat "$O/tunes/gelu/h200.jsonl" >> "$O/merged.jsonl"
timeout 200 ./build/benchmarks/tune_suite "$O/tunes/softmax" --trials 16 --only "$softmax" \
  --fix stash_terms=true,tma_store=true > "$O/tunes/softmax.txt" 2>&1
cat "$O/tunes/softmax/h200.jsonl" >> "$O/merged.jsonl"
# Second call: the suite from the merged log beside cuBLAS, then PyTorch, then the report.
fused=gemm_layernorm_relu_M8192_K4096_N4096,gemm_softcap_softmax_M4096_K1024_N8192,post_layernorm_M16384_K1024_N1024
fused+=,post_layernorm_M16384_K4096_N1024,post_layernorm_M8192_K4096_N4096,post_layernorm_M8192_K1024_N4096
fused+=,post_rmsnorm_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_softmax_M4096_K1024_N8192
fused+=,gemm_softmax_M4096_K4096_N32000
gemms=gemm_M8192_K8192_N8192,gemm_M16384_K1024_N1024,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096
timeout 200 ./build/benchmarks/bench_suite "$O/s/comfuse.json" --repeats 50 --only $fused,$gemms \
  --log "$O/merged.jsonl" > "$O/s/bench.txt" 2>&1
torder=gemm_softmax_M4096_K1024_N8192,gemm_softmax_M4096_K4096_N32000,post_layernorm_M16384_K1024_N1024,$fused
timeout 340 python3 benchmarks/torch_baselines.py "$O/s/torch.json" --only $torder --compile-budget 250 \
  > "$O/s/torch.txt" 2>&1
python3 benchmarks/report.py --comfuse "$O/s/comfuse.json" --torch "$O/s/torch.json" --out-prefix "$O/s/suite" \
  --tune-log "$O/merged.jsonl"
