#!/usr/bin/env bash
# One knob on the GPU machine, in one call: the generated-kernel GPU test's variants of the knob (cases whose
# label holds "<KNOB>_", checked against the CPU reference under a time limit), then the A/B of the knob about
# each row's fastest schedule in the tuning log (tune_suite --ab, two trials a row: the schedule and its
# canonical twin with the knob flipped), and a table of the two times a row.
# Usage: benchmarks/ab_knob.sh OUTDIR KNOB ROW[,ROW...] [GPU_TEST_SECONDS] [LOG]
#   ROW: a suite row's instance name (gemm_softmax_M4096_K1024_N8192); GPU_TEST_SECONDS: 0 skips the GPU test
#   (default 240); LOG: the tuning log whose winners are the A/B's bases (default tuning_logs/h200.jsonl).
# COMFUSE_GPU_SHARD=i/n in the environment checks every n-th variant only, for runs in parts over several calls.
# Writes OUTDIR/gpu-tests-KNOB.log, OUTDIR/ab/ (tune_suite's log and summary), OUTDIR/ab.txt and
# OUTDIR/ab-table.txt. Exits non-zero when a checked kernel failed or the A/B could not run.
set -euo pipefail

if [[ $# -lt 3 || $# -gt 5 ]]; then
  echo "usage: $0 OUTDIR KNOB ROW[,ROW...] [GPU_TEST_SECONDS] [LOG]" >&2
  exit 2
fi
mkdir -p "$1"
outdir=$(realpath "$1")
knob=$2
rows=$3
limit=${4:-240}
log=$(realpath "${5:-$(dirname "$0")/../tuning_logs/h200.jsonl}")
cd "$(dirname "$0")/.."

status=0
if [[ $limit -gt 0 ]]; then
  # Whatever ran before the limit counts; a kernel that ran and missed the reference is a failure.
  COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES="${knob}_" timeout "$limit" \
    ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' \
    >"$outdir/gpu-tests-$knob.log" 2>&1 || true
  checked=$(grep -c '^ok ' "$outdir/gpu-tests-$knob.log" || true)
  failed=$(grep -c '^FAIL \|Failure$' "$outdir/gpu-tests-$knob.log" || true)
  echo "GPU test, ${knob}_ variants: $checked outputs within the tolerance, $failed failures (limit ${limit} s)"
  [[ $failed -eq 0 ]] || status=1
fi

./build/benchmarks/tune_suite "$outdir/ab" --trials 2 --only "$rows" --ab "$knob" --ab-log "$log" \
  >"$outdir/ab.txt" 2>"$outdir/ab.err" || { tail -5 "$outdir/ab.err" >&2; exit 1; }
python3 - "$outdir/ab/tuning.jsonl" "$knob" >"$outdir/ab-table.txt" <<'EOF'
import json, sys
path, knob = sys.argv[1], sys.argv[2]
rows = {}
for line in open(path):
    r = json.loads(line)
    # Records name no suite row: the output and the shapes of the anchor's operands (X [M, K], W [N, K]).
    program = r["workload"]["program"]
    x, w = program["tensors"][0]["shape"], program["tensors"][1]["shape"]
    name = f"{program['outputs'][0]} M{x[0]} K{x[1]} N{w[0]} ({r['workload']['key'][7:15]})"
    on = bool(r["schedule"].get(knob, False))
    value = r.get("median_us") if r.get("status") == "ok" else r.get("status")
    rows.setdefault(name, {})[on] = value  # the later record of a schedule (re-measured) wins
print(f"{'row':<48} {knob + ' off':>14} {knob + ' on':>14}")
for name, times in rows.items():
    cell = lambda v: "-" if v is None else (f"{v:.1f} us" if isinstance(v, float) else str(v))
    print(f"{name:<48} {cell(times.get(False)):>14} {cell(times.get(True)):>14}")
EOF
cat "$outdir/ab-table.txt"
exit $status
