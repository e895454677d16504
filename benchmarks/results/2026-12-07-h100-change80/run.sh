#!/usr/bin/env bash
# On an H200: chunked_pair (Change 77's A/B), then chunked in what time is left (LIMIT s in all).
# On any other card: Change 80's comparison, the two softmax rows searched from scratch by Change 79's
# tune_suite (c79.tgz) and by this one (bin.tgz), 24 trials each.
set -uo pipefail
LIMIT=${LIMIT:-570}
here=${PACKS:?the folder holding bin.tgz (this build's binaries) and c79.tgz (Change 79's tune_suite)}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
date -u +%FT%TZ >> "$OUT/device.txt"; sha256sum tuning_logs/h200.jsonl >> "$OUT/device.txt"
tar -xzf $here/bin.tgz
start=$SECONDS
if ! grep -q H200 "$OUT/device.txt"; then
  mkdir -p $here/o79 && tar -xzf $here/c79.tgz -C $here/o79
  rows=gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192
  mkdir -p "$OUT/c80"
  for v in old new; do
    bin=./build/benchmarks/tune_suite; [[ $v == old ]] && bin=$here/o79/build/benchmarks/tune_suite
    timeout 270 $bin "$OUT/c80/$v" --trials 24 --only $rows > "$OUT/c80/$v.txt" 2>&1 || true
    echo "$v exit at $((SECONDS-start)) s"
  done
  for v in old new; do echo "== $v"; grep -h " best \|FAILED" "$OUT/c80/$v.txt" | cut -c1-220; done
  python3 - "$OUT"/c80 <<'PY'
import json, sys, glob
for v in ["old", "new"]:
    for f in glob.glob(f"{sys.argv[1]}/{v}/*.jsonl"):
        n = {}
        for line in open(f):
            r = json.loads(line); s = r["schedule"]; k = r["workload"]["program"]["tensors"][-1]["name"]
            key = (len(r["workload"]["program"]["tensors"]), bool(s.get("stash_terms")))
            if r["status"] == "ok": n.setdefault(key, []).append(r["median_us"])
        for key, t in sorted(n.items()):
            print(v, "tensors", key[0], "terms" if key[1] else "logits", len(t), "measured, best %.1f" % min(t))
PY
  exit 0
fi
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
