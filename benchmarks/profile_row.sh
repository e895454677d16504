#!/usr/bin/env bash
# Hardware counters of a suite workload's comfuse kernel, on the GPU machine (Nsight Compute must read counters
# there). bench_suite runs the workload's rows from the tuning log; ncu profiles one launch of the kernels whose names match
# the pattern (after a few warm ones) with its full set of sections, clocks left alone.
# Usage: benchmarks/profile_row.sh OUTDIR LOG WORKLOAD [KERNEL_REGEX]   (default regex: comfuse_)
# Writes OUTDIR/<WORKLOAD>.ncu.txt (every section) and prints the lines that say where the time goes.
set -euo pipefail
[[ $# -ge 3 && $# -le 4 ]] || { echo "usage: $0 OUTDIR LOG WORKLOAD [KERNEL_REGEX]" >&2; exit 2; }
mkdir -p "$1"
outdir=$(realpath "$1")
log=$(realpath "$2")
row=$3
regex=${4:-comfuse_}
cd "$(dirname "$0")/.."
report="$outdir/$row.ncu.txt"
ncu --clock-control none --set full -k "regex:$regex" --launch-skip 3 --launch-count 1 \
  ./build/benchmarks/bench_suite "$outdir/$row.bench.json" --log "$log" --only "$row" --b2b-fused --clock events \
  >"$report" 2>&1 || { tail -20 "$report"; exit 1; }
echo "== $row"
grep -E "^  [a-z_]+.*\(|Duration|Throughput|Pipe|Busy|Registers Per|Achieved Occupancy|Stall|Bank|L2 Hit|Executed Ipc|Issue Slots|Shared Memory|Tensor|Warp Cycles Per Issued" \
  "$report" | sed 's/  */ /g' | cut -c1-150 | head -60
