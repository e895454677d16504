#!/usr/bin/env bash
# global_exchange on post-LN K1024 N1024: traces (each checked against the CPU reference first) of the log's
# cluster form (DSMEM, 3 stages) against the same with the exchange through global memory (3 stages), and
# with the vectors unstaged and 4 stages; the deferred best (log winner with the stash in one slot); then the global_exchange_ GPU-test variants.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
cat $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
S=M=16384,K=1024,N=1024
summ() {  # name file rc
  echo "$1 rc $3 $(grep -E '^check' $2 | cut -c1-40) $(grep -E "^time" $2 | sed "s/(medians.*//; s/time  *//") $(grep -E "^kernels" $2 | sed "s/kernels *untraced //")" | tee -a $O/p/summary.txt
}
trs() {  # name schedule-file [settings]
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S --schedule "$(cat $(dirname "$0")/$2)" ${3:+--set $3} --repeats 20 > $f 2>&1
  summ $1 $f $?; pack
}
trl() {  # name settings
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S --log tuning_logs/h200.jsonl --allow-target-mismatch --set $2 --repeats 20 > $f 2>&1
  summ $1 $f $?; pack
}
trs cl4-global-3st schedule-global-3st.json
trs cl4-dsmem-3st schedule-dsmem-3st.json
trs cl4-global-4st-unstaged schedule-global-4st-unstaged.json
trs cl4-global-3st-unstaged schedule-global-3st.json unstaged_vectors=true
PP=tma_inputs=true,tma_store=true,stash_in_slot=true,staged_pairs=true,wide_finish=true,streaming_hints=true,bf16_stash=true
trl pp-one-slot $PP,one_input_slot=true
trs cl4-global-4st-unstaged-2 schedule-global-4st-unstaged.json
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=global_exchange_ COMFUSE_GPU_SHARD=0/3 timeout 170 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*/post_layernorm:Workloads/FusedKernelGpuTest.*/gemm_softmax:Workloads/FusedKernelGpuTest.*/post_rmsnorm' > $O/p/gpu-tests-global.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $O/p/gpu-tests-global.log) fail $(grep -c '^FAIL \|Failure$' $O/p/gpu-tests-global.log)" | tee -a $O/p/summary.txt
pack
cat $O/p/summary.txt
