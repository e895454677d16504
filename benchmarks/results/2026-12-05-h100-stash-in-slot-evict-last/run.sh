#!/usr/bin/env bash
# On an H200: benchmarks/device_plan.sh stash. On an H100: the evict_last TMA stash A/B (pp and coop with
# hints), its GPU-test variants, the trace CLI GPU test, then the coop stash-in-slot tuning.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
cat $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
if grep -q H200 $O/p/device.txt; then
  bash benchmarks/device_plan.sh stash $O/p/plan
  pack; exit 0
fi
S=M=16384,K=1024,N=1024
tr1() {  # name settings
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S --log tuning_logs/h200.jsonl --allow-target-mismatch --set $2 --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^check' $f | cut -c1-30) $(grep -E "^time" $f | sed "s/(medians.*//; s/time  *//") $(grep -E "^kernels" $f | sed "s/kernels *untraced //")" | tee -a $O/p/summary.txt
  pack
}
PP=tma_inputs=true,one_input_slot=true,tma_store=true,stash_in_slot=true,staged_pairs=true,wide_finish=true,streaming_hints=true
CO=$PP,warp_roles=cooperative,bm=128,stages=3
tr1 pp-hints $PP
tr1 pp-hints-keep $PP,stash_evict_last=true
tr1 co-hints $CO
tr1 co-hints-keep $CO,stash_evict_last=true
tr1 pp-hints-2 $PP
tr1 pp-hints-keep-2 $PP,stash_evict_last=true
tr1 co-hints-2 $CO
tr1 co-hints-keep-2 $CO,stash_evict_last=true
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=stash_evict_last_streaming_hints_ timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $O/p/gpu-tests-keep-slot.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $O/p/gpu-tests-keep-slot.log) fail $(grep -c '^FAIL \|Failure$' $O/p/gpu-tests-keep-slot.log)" | tee -a $O/p/summary.txt
COMFUSE_REQUIRE_GPU=1 timeout 120 ./build/tests/cli/cli_unit_tests --gtest_filter='TraceCommand.*' > $O/p/cli-trace-tests.log 2>&1
echo "cli trace tests exit $? $(grep -E '^\[  (PASSED|FAILED)' $O/p/cli-trace-tests.log | tr '\n' ' ')" | tee -a $O/p/summary.txt
pack
timeout 150 ./build/benchmarks/tune_suite $O/p/tune --trials 12 --only post_layernorm_M16384_K1024_N1024 --fix stash_in_slot=true,warp_roles=cooperative > $O/p/tune-coop.txt 2>&1
echo "tune exit $? $(grep best $O/p/tune-coop.txt | tail -1)" | tee -a $O/p/summary.txt
pack
cat $O/p/summary.txt
