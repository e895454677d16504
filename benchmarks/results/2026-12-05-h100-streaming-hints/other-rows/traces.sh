#!/usr/bin/env bash
# Change 50 on the other deferred rows: each row's H200-log winner with wide_finish, without and with
# streaming_hints (and the post-LN N4096 row in its stash-in-slot form).
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
tr1() {  # name workload shape settings
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace $2 --shape $3 --log tuning_logs/h200.jsonl --allow-target-mismatch --set $4 --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^check' $f | cut -c12-16) $(grep -E "^time" $f | sed "s/(medians.*//; s/time  *//") $(grep -E "^kernels" $f | sed "s/kernels *untraced //")" | tee -a $O/p/summary.txt
  pack
}
PP=tma_inputs=true,one_input_slot=true,tma_store=true,stash_in_slot=true,staged_pairs=true,wide_finish=true
for h in false true; do
  tr1 ln4096-$h post_layernorm M=8192,K=1024,N=4096 $PP,streaming_hints=$h
  tr1 softmax-$h gemm_softmax M=4096,K=1024,N=8192 wide_finish=true,streaming_hints=$h
  tr1 rms-$h post_rmsnorm M=8192,K=4096,N=4096 wide_finish=true,streaming_hints=$h
  tr1 gelu-$h gemm_gelu_layernorm M=16384,K=1024,N=4096 wide_finish=true,streaming_hints=$h
  tr1 lnk4-$h post_layernorm M=16384,K=4096,N=1024 $PP,streaming_hints=$h
done
cat $O/p/device.txt; cat $O/p/summary.txt
