#!/usr/bin/env bash
# Change 50 (streaming_hints): trace A/B on post-LN K1024 N1024 (ping-pong and cooperative stash-in-slot
# forms), then the GPU test's streaming_hints_ variants.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
S=M=16384,K=1024,N=1024
tr1() {  # name settings
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S --log tuning_logs/h200.jsonl --allow-target-mismatch --set $2 --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^check' $f | cut -c1-30) $(grep -E "^time" $f | sed "s/(medians.*//; s/time  *//") $(grep -E "^kernels" $f | sed "s/kernels *untraced //")" | tee -a $O/p/summary.txt
  pack
}
PP=tma_inputs=true,one_input_slot=true,tma_store=true,stash_in_slot=true,staged_pairs=true,wide_finish=true
CO=$PP,warp_roles=cooperative,bm=128,stages=3
tr1 pp $PP
tr1 pp-hints $PP,streaming_hints=true
tr1 pp-rev $PP,reverse_finish=true
tr1 pp-rev-hints $PP,reverse_finish=true,streaming_hints=true
tr1 co $CO
tr1 co-hints $CO,streaming_hints=true
tr1 pp-2 $PP
tr1 pp-hints-2 $PP,streaming_hints=true
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=streaming_hints_ timeout 300 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $O/p/gpu-tests-streaming_hints.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $O/p/gpu-tests-streaming_hints.log) fail $(grep -c '^FAIL \|Failure$' $O/p/gpu-tests-streaming_hints.log)" | tee -a $O/p/summary.txt
grep -E '^\[  (PASSED|FAILED)|^\[ +(OK|FAILED) +\]' $O/p/gpu-tests-streaming_hints.log | tail -12
pack
cat $O/p/device.txt; cat $O/p/summary.txt
