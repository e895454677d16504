#!/usr/bin/env bash
# Phase traces of the suite's fused rows on the GPU machine, in one call: the traced kernels' GPU test, then
# `comfuse trace` of each row's winner in the tuning log (measured on the log's GPU, whichever GPU runs it)
# and of the post-LN N = 1024 rows' fastest cluster form (the in-kernel reduction that lost to the deferred
# one), a line each as it ends (its check and untraced kernel times), then one line a kernel (with what the
# trace's stores added to its time).
# Usage: benchmarks/trace_rows.sh [--set KNOB=VALUE,...] [--cluster-set KNOB=VALUE,...]... [--no-gpu-test]
#                                OUTDIR [LOG] [ROW...]
#   LOG: default tuning_logs/h200.jsonl; ROW: a suite instance name (default: the ten fused rows and the
#   K = 1024 GEMM). --set: each row's winner once more with those knobs changed (`comfuse trace --set`), as
#   <ROW>.set: an A/B in one call on whichever GPU runs it, each side checked against the CPU reference.
#   --cluster-set: the post-LN N = 1024 rows' cluster form once more with those knobs changed, as
#   <ROW>.cluster.set<I> for the I-th --cluster-set (from 1).
#   --no-gpu-test: without the traced kernels' GPU test (a call that ran it already).
# Writes OUTDIR/gpu-test.log, OUTDIR/<ROW>.txt (the summary), OUTDIR/<ROW>.json (every record),
# OUTDIR/<ROW>.timeline.{txt,png} (benchmarks/trace_timeline.py) and OUTDIR/traces.txt (the last table).
# Exits non-zero when the GPU test or a traced kernel's check failed.
set -euo pipefail

settings=
cluster_settings=()
gpu_test=1
while [[ ${1:-} == --* ]]; do
  case $1 in
    --set)
      [[ $# -ge 2 ]] || { echo "$0: --set needs KNOB=VALUE,..." >&2; exit 2; }
      settings=$2
      shift 2
      ;;
    --cluster-set)
      [[ $# -ge 2 ]] || { echo "$0: --cluster-set needs KNOB=VALUE,..." >&2; exit 2; }
      cluster_settings+=("$2")
      shift 2
      ;;
    --no-gpu-test) gpu_test=0; shift ;;
    *) echo "$0: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 1 ]] || {
  echo "usage: $0 [--set KNOB=VALUE,...] [--cluster-set KNOB=VALUE,...]... [--no-gpu-test] OUTDIR [LOG] [ROW...]" >&2
  exit 2
}
mkdir -p "$1"
outdir=$(realpath "$1")
log=$(realpath "${2:-$(dirname "$0")/../tuning_logs/h200.jsonl}")
shift $(($# >= 2 ? 2 : 1))
rows=("$@")
if [[ ${#rows[@]} -eq 0 ]]; then
  rows=(post_layernorm_M16384_K1024_N1024 post_layernorm_M16384_K4096_N1024 post_layernorm_M8192_K4096_N4096
        post_layernorm_M8192_K1024_N4096 post_rmsnorm_M8192_K4096_N4096 gemm_layernorm_relu_M8192_K4096_N4096
        gemm_gelu_layernorm_M16384_K1024_N4096 gemm_softmax_M4096_K1024_N8192 gemm_softmax_M4096_K4096_N32000
        gemm_softcap_softmax_M4096_K1024_N8192 gemm_M16384_K1024_N1024)
fi
cd "$(dirname "$0")/.."
comfuse=./build/src/cli/comfuse

status=0
if [[ $gpu_test == 1 ]]; then
  COMFUSE_REQUIRE_GPU=1 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='PhaseTraceGpuTest.*' \
    >"$outdir/gpu-test.log" 2>&1 || status=1
  echo "GPU test of the traced kernels: $(grep -E '^\[  (PASSED|FAILED) ' "$outdir/gpu-test.log" | head -1)"
fi

# "post_layernorm_M16384_K1024_N1024" -> "post_layernorm" and "M=16384,K=1024,N=1024".
split_row() {
  local name=$1 params
  workload=$(sed -E 's/_[A-Z]+[0-9]+(_[A-Z]+[0-9]+)*$//' <<<"$name")
  params=${name#"$workload"_}
  shape=$(sed -E 's/([A-Z]+)([0-9]+)/\1=\2/g; s/_/,/g' <<<"$params")
}

# The fastest ok record of ROW's key whose schedule has reduction "cluster", as JSON (empty when none).
cluster_schedule() {
  python3 - "$log" "$1" "$2" <<'PY'
import json, subprocess, sys
log, workload, shape = sys.argv[1:]
key = subprocess.run(["./build/src/cli/comfuse", "show", workload, "--shape", shape], capture_output=True,
                     text=True).stdout
best = None
for line in open(log):
    r = json.loads(line)
    if r.get("status") != "ok" or r["workload"]["key"] not in key:
        continue
    if r["schedule"].get("reduction") == "cluster" and (best is None or r["median_us"] < best["median_us"]):
        best = r
print(json.dumps(best["schedule"]) if best else "")
PY
}

trace_one() {  # NAME, then the arguments that choose the schedule
  local name=$1
  shift
  if "$comfuse" trace "$workload" --shape "$shape" "$@" --json "$outdir/$name.json" >"$outdir/$name.txt" \
       2>"$outdir/$name.err"; then
    # As it comes: a call cut short keeps what ran.
    echo "$name | $(grep -E '^(check|kernels) ' "$outdir/$name.txt" | tr '\n' ' ')"
    python3 benchmarks/trace_timeline.py "$outdir/$name.json" "$outdir/$name.timeline" >/dev/null ||
      echo "$name: no timeline"
  else
    status=1
    echo "$name: comfuse trace failed: $(tail -1 "$outdir/$name.err")"
  fi
}

for row in "${rows[@]}"; do
  split_row "$row"
  trace_one "$row" --log "$log" --allow-target-mismatch
  [[ -z $settings ]] || trace_one "$row.set" --log "$log" --allow-target-mismatch --set "$settings"
  if [[ $workload == post_layernorm && $shape == *N=1024 ]]; then
    schedule=$(cluster_schedule "$workload" "$shape")
    if [[ -n $schedule ]]; then
      trace_one "$row.cluster" --schedule "$schedule"
      for i in "${!cluster_settings[@]}"; do
        trace_one "$row.cluster.set$((i + 1))" --schedule "$schedule" --set "${cluster_settings[$i]}"
      done
    fi
  fi
done

{
  [[ -z $settings ]] || echo "<row>.set: the row's winner with $settings"
  for i in "${!cluster_settings[@]}"; do
    echo "<row>.cluster.set$((i + 1)): the row's fastest cluster form with ${cluster_settings[$i]}"
  done
  printf '%-48s %6s %10s %9s %10s %11s %7s  %s\n' kernel CTAs "span us" mainloop "tile ML us" "untraced us" \
    "trace" "largest consumer phase"
  for txt in "$outdir"/*.txt; do
    name=$(basename "$txt" .txt)
    [[ $name == traces || $name == gpu-test || $name == *.timeline ]] && continue
    line=$(grep -m1 '^CTAs ' "$txt" || true)
    [[ -n $line ]] || continue
    phase=$(awk '/^consumer warpgroups/ {getline; getline; print; exit}' "$txt" | sed -E 's/  +/ /g')
    cost=$(sed -nE 's/^time .* the trace adds ([-+0-9.]+%)$/\1/p' "$txt")
    untraced=$(sed -nE 's/^time .* untraced ([0-9.]+) us .*/\1/p' "$txt")
    sed -E 's/^CTAs ([0-9]+), span ([0-9.]+) us \(median\), mainloops cover ([0-9]+%).*mainloop ([0-9.]+) us$/\1 \2 \3 \4/' \
      <<<"$line" | { read -r ctas span share tile; printf '%-48s %6s %10s %9s %10s %11s %7s  %s\n' "$name" \
        "$ctas" "$span" "$share" "$tile" "${untraced:--}" "${cost:--}" "$phase"; }
  done
} >"$outdir/traces.txt"
cat "$outdir/traces.txt"
exit $status
