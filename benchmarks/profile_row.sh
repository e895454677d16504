#!/usr/bin/env bash
# Hardware counters of a suite workload's comfuse kernel, on the GPU machine (Nsight Compute must read counters
# there). bench_suite runs the workload's rows from the tuning log, timed with CUDA events (ncu holds CUPTI);
# ncu profiles one launch of the kernels whose names match the pattern (after a few warm ones) with its full
# set of sections, clocks left alone.
# Usage: benchmarks/profile_row.sh [--allow-target-mismatch] OUTDIR LOG WORKLOAD [KERNEL_REGEX]
#   (default regex: a comfuse kernel whose name ends in its key's hex digits, the main kernel; '_finish$' takes
#   a deferred reduction's finish kernel instead. Launches are counted over the matching kernels only, so a
#   regex matching both would land the skip on a finish kernel. --allow-target-mismatch profiles the log's
#   winner recorded on another card, where bench_suite would otherwise fall back to the default schedule)
# Writes OUTDIR/<WORKLOAD>.ncu-rep (the report), .ncu.txt (every section), .sass.csv (the source page: stall
# samples by SASS instruction) and .stalls.txt (benchmarks/stall_summary.py of it), and prints the lines that say
# where the time goes.
set -euo pipefail
mismatch=()
[[ ${1:-} != --allow-target-mismatch ]] || { mismatch=(--allow-target-mismatch); shift; }
[[ $# -ge 3 && $# -le 4 ]] || {
  echo "usage: $0 [--allow-target-mismatch] OUTDIR LOG WORKLOAD [KERNEL_REGEX]" >&2
  exit 2
}
mkdir -p "$1"
outdir=$(realpath "$1")
log=$(realpath "$2")
row=$3
regex=${4:-'^comfuse_.*[0-9a-f]$'}
cd "$(dirname "$0")/.."
base="$outdir/$row"
ncu --clock-control none --set full --import-source no -k "regex:$regex" --launch-skip 3 --launch-count 1 \
  -f -o "$base" ./build/benchmarks/bench_suite "$base.bench.json" --log "$log" --only "$row" --b2b-fused \
  --clock events "${mismatch[@]}" >"$base.run.txt" 2>&1 || { tail -20 "$base.run.txt"; exit 1; }
ncu --import "$base.ncu-rep" --page details >"$base.ncu.txt"
ncu --import "$base.ncu-rep" --page source --csv --print-source sass >"$base.sass.csv"
python3 benchmarks/stall_summary.py "$base.sass.csv" >"$base.stalls.txt"
echo "== $row"
grep -E "^  [a-z_]+.*\(|Duration|Throughput|Busy|Registers Per|Achieved Occupancy|Executed Ipc|Issue Slots" \
  "$base.ncu.txt" | sed 's/  */ /g' | cut -c1-150 | head -30
head -25 "$base.stalls.txt"
