#!/usr/bin/env bash
# Runs the benchmark suite on the GPU machine: comfuse's driver (build/benchmarks/bench_suite, built beforehand),
# the PyTorch baselines, then the merged report (OUTDIR/<date>-h200.{json,md,png}), and prints its table.
# Usage: benchmarks/run_suite.sh OUTDIR [--log FILE]   (--log: the tuning log that bench_suite replays)
# COMFUSE_TORCH_COMPILE_BUDGET=S: PyTorch rows starting after S seconds are not compiled (default: no budget).
# A stage that fails part-way still leaves its JSON (the scripts record failures per row), so the report is made
# whenever both JSON files exist; the exit status is then that of the first stage that failed, else 0.
set -euo pipefail

usage() {
  echo "usage: $0 OUTDIR [--log FILE]" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
outdir=$1
shift
log=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --log)
      [[ $# -ge 2 ]] || usage
      log=$(realpath "$2")
      shift 2
      ;;
    *) usage ;;
  esac
done

mkdir -p "$outdir"
outdir=$(realpath "$outdir")
cd "$(dirname "$0")/.."

bench=./build/benchmarks/bench_suite
if [[ ! -x $bench ]]; then
  echo "run_suite: $bench is missing: build comfuse first (bash scripts/build.sh)" >&2
  exit 1
fi

status=0
stage() {
  # Runs one stage; a failure is reported and remembered, and the suite goes on.
  local name=$1
  shift
  echo "run_suite: $name" >&2
  local rc=0
  "$@" || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "run_suite: $name exited with status $rc" >&2
    [[ $status -ne 0 ]] || status=$rc
  fi
}

log_args=()
[[ -z $log ]] || log_args=(--log "$log")
stage "comfuse (bench_suite)" "$bench" "$outdir/comfuse.json" --b2b-fused "${log_args[@]}"
stage "PyTorch baselines" python3 benchmarks/torch_baselines.py "$outdir/torch.json" \
  --compile-budget "${COMFUSE_TORCH_COMPILE_BUDGET:-0}"

for input in "$outdir/comfuse.json" "$outdir/torch.json"; do
  if [[ ! -s $input ]]; then
    echo "run_suite: $input was not written, so there is no report (see the stage's messages above)" >&2
    exit 1
  fi
done

prefix="$outdir/$(date -u +%F)-h200"
tune_args=()
[[ -z $log ]] || tune_args=(--tune-log "$log")
stage "report" python3 benchmarks/report.py --comfuse "$outdir/comfuse.json" --torch "$outdir/torch.json" \
  --out-prefix "$prefix" "${tune_args[@]}"
[[ ! -f $prefix.md ]] || cat "$prefix.md"
exit "$status"
