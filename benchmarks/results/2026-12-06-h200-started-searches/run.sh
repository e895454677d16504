#!/usr/bin/env bash
# The four calls as run (nineteenth session, 2026-12-06, 22:28-22:45 UTC, one H200), at 86b7113. Builds
# nothing: the binaries under build/ are a Release build of that tree. The records of the first and third
# calls are the last 317 lines of tuning_logs/h200.jsonl as committed with this folder (107, then 210); the
# fourth call replayed the log with all of them (its report names it merged.jsonl: sha256 549e5551...).
set -uo pipefail
O=$1; mkdir -p "$O/starts" "$O/open8" "$O/first-suite"
log=tuning_logs/h200.jsonl  # as it was before this folder's records
norm_rows=post_rmsnorm_M8192_K4096_N4096,gemm_layernorm_relu_M8192_K4096_N4096
# First call: Change 70's fixed search and Change 71's open search from the log's winners, the two rows
# replayed from each log beside cuBLAS (and the log's own winners), then PyTorch over them.
timeout 150 ./build/benchmarks/tune_suite "$O/starts/fixed" --trials 24 --only "$norm_rows" \
  --fix bf16_stash=true,wide_finish=true,multicast_b=true > "$O/starts/fixed.txt" 2>&1
timeout 150 ./build/benchmarks/tune_suite "$O/starts/open" --trials 24 --only "$norm_rows" --start-log $log \
  > "$O/starts/open.txt" 2>&1
timeout 60 ./build/benchmarks/bench_suite "$O/starts/shipped.json" --repeats 50 \
  --only "$norm_rows,gemm_M8192_K4096_N4096" --log $log > "$O/starts/bench-shipped.txt" 2>&1
for v in fixed open; do
  cat $log "$O/starts/$v/h200.jsonl" > "$O/$v.jsonl"
  timeout 60 ./build/benchmarks/bench_suite "$O/starts/$v.json" --repeats 50 --only "$norm_rows" --log "$O/$v.jsonl" \
    > "$O/starts/bench-$v.txt" 2>&1
done
timeout 150 python3 benchmarks/torch_baselines.py "$O/starts/torch.json" --only "$norm_rows" --compile-budget 100 \
  > "$O/starts/torch.txt" 2>&1
cat $log "$O/starts/fixed/h200.jsonl" "$O/starts/open/h200.jsonl" > "$O/merged.jsonl"
fused=gemm_layernorm_relu_M8192_K4096_N4096,gemm_softcap_softmax_M4096_K1024_N8192,post_layernorm_M16384_K1024_N1024
fused+=,post_layernorm_M16384_K4096_N1024,post_layernorm_M8192_K4096_N4096,post_layernorm_M8192_K1024_N4096
fused+=,post_rmsnorm_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_softmax_M4096_K1024_N8192
fused+=,gemm_softmax_M4096_K4096_N32000
gemms=gemm_M8192_K8192_N8192,gemm_M16384_K1024_N1024,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096
torder=gemm_softmax_M4096_K1024_N8192,gemm_softmax_M4096_K4096_N32000,post_layernorm_M16384_K1024_N1024,$fused
suite() {  # the fourteen rows beside cuBLAS, PyTorch over the ten fused rows, the report
  timeout 200 ./build/benchmarks/bench_suite "$1/comfuse.json" --repeats 50 --only $fused,$gemms \
    --log "$O/merged.jsonl" > "$1/bench.txt" 2>&1
  timeout 340 python3 benchmarks/torch_baselines.py "$1/torch.json" --only $torder --compile-budget 250 \
    > "$1/torch.txt" 2>&1
  python3 benchmarks/report.py --comfuse "$1/comfuse.json" --torch "$1/torch.json" --out-prefix "$1/suite" \
    --tune-log "$O/merged.jsonl" > "$1/report.txt" 2>&1
}
# Second call: the suite from the log with the first call's records.
suite "$O/first-suite"
# Third call: the other eight reducing rows searched open from that log's winners, then replayed from the log
# before and after beside cuBLAS.
others=post_layernorm_M8192_K4096_N4096,post_layernorm_M16384_K1024_N1024,post_layernorm_M16384_K4096_N1024
others+=,post_layernorm_M8192_K1024_N4096,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_softmax_M4096_K1024_N8192
others+=,gemm_softcap_softmax_M4096_K1024_N8192,gemm_softmax_M4096_K4096_N32000
timeout 330 ./build/benchmarks/tune_suite "$O/open8/t" --trials 24 --only "$others" --start-log "$O/merged.jsonl" \
  > "$O/open8/tune.txt" 2>&1
cat "$O/merged.jsonl" "$O/open8/t/h200.jsonl" > "$O/after.jsonl"
timeout 100 ./build/benchmarks/bench_suite "$O/open8/old.json" --repeats 50 --only $others --log "$O/merged.jsonl" \
  > "$O/open8/bench-old.txt" 2>&1
timeout 100 ./build/benchmarks/bench_suite "$O/open8/new.json" --repeats 50 --only $others --log "$O/after.jsonl" \
  > "$O/open8/bench-new.txt" 2>&1
mv "$O/after.jsonl" "$O/merged.jsonl"
# Fourth call: the suite from the log with every record of this folder (the files at its top level).
suite "$O"
