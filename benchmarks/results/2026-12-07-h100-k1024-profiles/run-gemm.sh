#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, one H100; no kind named). Builds nothing: bench_suite is a
# Release build of 9203028. The K = 1024 GEMM profiled, ours (the H200 log's winner) and cuBLAS's.
# Usage: run-*.sh OUTDIR, from the repository's root.
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
which ncu >> "$O/device.txt" 2>&1
row=gemm_M16384_K1024_N1024
timeout 150 bash benchmarks/profile_row.sh --allow-target-mismatch "$O/ours" tuning_logs/h200.jsonl $row > "$O/ours.txt" 2>&1
echo "ours rc=$?" >> "$O/ours.txt"
timeout 150 bash benchmarks/profile_row.sh --allow-target-mismatch "$O/cublas" tuning_logs/h200.jsonl $row \
  'nvjet|sm90|cutlass|xmma|gemm' > "$O/cublas.txt" 2>&1
echo "cublas rc=$?" >> "$O/cublas.txt"
for s in ours cublas; do
  f="$O/$s/$row.ncu.txt"; [ -f "$f" ] || continue
  grep -E "^  [a-zA-Z_].*\(|Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Executed Ipc A|Block Size|Grid Size|Cluster Size|Shared Memory Configuration Size|Dynamic Shared|L2 Hit Rate|Waves Per SM|Elapsed Cycles|SM Frequency" "$f" | sed 's/  */ /g' | cut -c1-160 > "$O/$s.key.txt"
  tar -czf "$O/$s.tgz" --exclude='*.ncu-rep' -C "$O" "$s" && rm -rf "${O:?}/$s"
done
cat "$O/ours.key.txt" "$O/cublas.key.txt" 2>/dev/null; tail -3 "$O/ours.txt" "$O/cublas.txt"
