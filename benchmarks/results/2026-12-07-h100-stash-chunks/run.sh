#!/usr/bin/env bash
# What ran (twenty-third session, 2026-12-07, 09:10-09:11 UTC, one H100; no kind named). Builds nothing:
# tune_suite and comfuse are a Release build of 9399800 (store_chunks searched with a deferred stash, taken
# back out after this run). A fixed search over the deferred stash in chunks, then its winner and the shipped
# H200 winner (postln_*.json) traced side by side. Usage: run.sh OUTDIR, from the repository's root.
set -uo pipefail
O=$1; D=$(cd "$(dirname "$0")" && pwd); mkdir -p "$O"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/device.txt" 2>&1; date -u >> "$O/device.txt"
for r in n1024:post_layernorm_M16384_K1024_N1024:M=16384,K=1024,N=1024 n4096:post_layernorm_M8192_K1024_N4096:M=8192,K=1024,N=4096; do
  IFS=: read short row shape <<< "$r"
  timeout 150 ./build/benchmarks/tune_suite "$O/t_$short" --trials 24 --only "$row" --fix store_chunks=true \
    > "$O/tune_$short.txt" 2>&1
  echo "tune $short rc=$?" >> "$O/summary.txt"
  python3 - "$O/t_$short/tuning.jsonl" "$O/best_$short.json" >> "$O/summary.txt" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in recs if r.get('status') == 'ok' and r.get('median_us')]
print(f"records {len(recs)}, ok {len(ok)}")
best = min(ok, key=lambda r: r['median_us'])
print(f"best {best['median_us']:.1f} us {json.dumps(best['schedule'], sort_keys=True)}")
json.dump(best['schedule'], open(sys.argv[2], 'w'))
PY
  for v in shipped best; do
    sched=$([ $v = shipped ] && cat "$D/postln_$short.json" || cat "$O/best_$short.json")
    timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape "$shape" --repeats 30 --schedule "$sched" \
      > "$O/trace_${v}_$short.txt" 2>&1
    echo "== $v $short rc=$?" >> "$O/summary.txt"
    grep -E "^(schedule|check|time|kernels)" "$O/trace_${v}_$short.txt" >> "$O/summary.txt"
  done
  cp "$O/t_$short/tuning.jsonl" "$O/tuning_$short.jsonl" 2>/dev/null; rm -rf "$O/t_$short"
done
cat "$O/summary.txt"
