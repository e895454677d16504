#!/usr/bin/env bash
# Does a deeper ring shorten the ping-pong form's first-stage wait? The H200 log's post-LN K1024 N1024 winner
# (ping-pong 64 x 256, deferred, no staged inputs) at 4 and 5 stages, and with the stash in the slot at 4.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
S=M=16384,K=1024,N=1024
tr1() {  # name settings
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S --log tuning_logs/h200.jsonl --allow-target-mismatch ${2:+--set $2} --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^time' $f | sed 's/(medians.*//')" | tee -a $O/p/summary.txt
  grep -E '^CTAs|^ +(first stage ready|mainloop begin|inputs ready|mainloop end|stage 0 elements|store issued) ' $f | tee -a $O/p/summary.txt
  pack
}
tr1 winner-4 ''
tr1 winner-5 stages=5
tr1 winner-3 stages=3
tr1 winner-4-wide wide_finish=true
tr1 winner-5-wide stages=5,wide_finish=true
tr1 slot-4 tma_inputs=true,one_input_slot=true,tma_store=true,stash_in_slot=true,staged_pairs=true,wide_finish=true
cat $O/p/device.txt
