#!/usr/bin/env bash
# In-kernel forms with the bf16 stash in shared memory (never searched: two stages) against the deferred
# form with the stash in the slot, post-LN K1024 N1024.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
S=M=16384,K=1024,N=1024
tr1() {  # name settings [schedule]
  local f=$O/p/trace-$1.txt src=(--log tuning_logs/h200.jsonl --allow-target-mismatch)
  [[ -n ${3:-} ]] && src=(--schedule "$(cat $3)")
  if [[ -z $2 ]]; then set_arg=(); else set_arg=(--set "$2"); fi
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S "${src[@]}" "${set_arg[@]}" --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^check' $f | cut -c1-40) $(grep -E '^time' $f | sed 's/(medians.*//')" | tee -a $O/p/summary.txt
  pack
}
tr1 deferred-best tma_inputs=true,one_input_slot=true,tma_store=true,stash_in_slot=true,staged_pairs=true,wide_finish=true
for f in ctaA ctaAi ctaC clsB clsBf; do tr1 $f '' benchmarks/results/2026-12-05-h100-in-kernel-shared-stash/$f.json; done
cat $O/p/device.txt; cat $O/p/summary.txt
