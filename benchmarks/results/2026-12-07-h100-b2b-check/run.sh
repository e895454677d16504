#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, one H100; no kind named): bench_suite (a Release build of the commit that
# added this folder) on the back-to-back rows from the shipped log, its fused kernels checked as the b2b tuner checks
# them (first, middle and last row blocks, a batch of attention each). Usage: run.sh OUTDIR, from the root.
set -uo pipefail
O=$1; mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
timeout 400 ./build/benchmarks/bench_suite "$O/b2b.json" --repeats 10 --only mlp_relu,mlp_gelu,attention,target_attention \
  --b2b-fused --log tuning_logs/h200.jsonl --allow-target-mismatch > "$O/bench.txt" 2>&1
echo "rc=$?" >> "$O/bench.txt"
python3 - "$O/b2b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d['workloads']:
    print(r['name'], {k: r.get(k) for k in ('correct', 'max_rel_err', 'b2b_fused_correct', 'b2b_fused_rel_err', 'b2b_fused_us', 'ours_us')})
PY
tail -15 "$O/bench.txt"
