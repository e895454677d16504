#!/usr/bin/env bash
# What ran, two calls on one H200 (PACKS: the folder holding bin.tgz, the tune_suite and bench_suite built from
# b26b855). First call: call1 below. Second call, minutes later, after the first call's records were appended
# to tuning_logs/h200.jsonl: call2 below.

# ---- call1
set -uo pipefail
LIMIT=${LIMIT:-570}
here=${PACKS:?the folder holding bin.tgz}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
date -u +%FT%TZ >> "$OUT/device.txt"; sha256sum tuning_logs/h200.jsonl >> "$OUT/device.txt"
tar -xzf $here/bin.tgz
start=$SECONDS
grep -q H200 "$OUT/device.txt" || { echo "not an H200"; exit 3; }
timeout 200 benchmarks/device_plan.sh chunked_pair "$OUT/plan"; echo "chunked_pair exit $? at $((SECONDS-start)) s"
[[ -f $OUT/plan/chunked_pair.tgz ]] && mv "$OUT/plan/chunked_pair.tgz" "$OUT/" || tar -czf "$OUT/chunked_pair.tgz" -C "$OUT/plan" chunked_pair
left=$((LIMIT - (SECONDS - start) - 15))
if (( left > 60 )); then
  timeout $left benchmarks/device_plan.sh chunked "$OUT/plan"; echo "chunked exit $? at $((SECONDS-start)) s"
  [[ -f $OUT/plan/chunked.tgz ]] && mv "$OUT/plan/chunked.tgz" "$OUT/" || tar -czf "$OUT/chunked.tgz" -C "$OUT/plan" chunked
fi
cd "$OUT"
for s in chunked_pair chunked; do [[ -d plan/$s ]] || continue; echo "== $s"; grep -h " best \|A/B of" plan/$s/*.txt | cut -c1-160
  for b in plan/$s/bench-*.txt; do echo "-- $b"; grep -v "^workload" $b | tail -6; done; done
rm -rf plan

# ---- call2: a second command, from the repository's root
cd "$(dirname "$0")/../../.."
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
grep -q H200 "$OUT/device.txt" || { echo "not an H200"; exit 3; }
date -u +%FT%TZ >> "$OUT/device.txt"; git rev-parse HEAD >> "$OUT/device.txt"
tar -xzf "$PACKS/bin.tgz"
log=tuning_logs/h200.jsonl; sha256sum $log >> "$OUT/device.txt"
fused=gemm_layernorm_relu_M8192_K4096_N4096,gemm_softcap_softmax_M4096_K1024_N8192,post_layernorm_M16384_K1024_N1024
fused+=,post_layernorm_M16384_K4096_N1024,post_layernorm_M8192_K4096_N4096,post_layernorm_M8192_K1024_N4096
fused+=,post_rmsnorm_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_softmax_M4096_K1024_N8192
fused+=,gemm_softmax_M4096_K4096_N32000
gemms=gemm_M8192_K8192_N8192,gemm_M16384_K1024_N1024,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096
torder=gemm_softmax_M4096_K1024_N8192,gemm_softmax_M4096_K4096_N32000,post_layernorm_M16384_K1024_N1024,$fused
S=$SECONDS
timeout 200 ./build/benchmarks/bench_suite "$OUT/comfuse.json" --repeats 50 --only $fused,$gemms --log $log \
  > "$OUT/bench.txt" 2>&1; echo "bench exit $? at $((SECONDS-S)) s"
timeout 340 python3 benchmarks/torch_baselines.py "$OUT/torch.json" --only $torder --compile-budget 250 \
  > "$OUT/torch.txt" 2>&1; echo "torch exit $? at $((SECONDS-S)) s"
python3 benchmarks/report.py --comfuse "$OUT/comfuse.json" --torch "$OUT/torch.json" --out-prefix "$OUT/suite" \
  --tune-log $log > "$OUT/report.txt" 2>&1
tail -30 "$OUT/report.txt"
