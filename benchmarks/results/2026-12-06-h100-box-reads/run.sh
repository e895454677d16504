#!/usr/bin/env bash
# box_reads (Change 54) on post-LN K1024 N1024: traces of the H100-tuned cooperative and ping-pong stash-in-slot
# forms without and with the knob (interleaved, twice), then the box_reads_ GPU-test variants (a third).
set -uo pipefail
O=$1; mkdir -p $O/p
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
cat $O/p/device.txt
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
# The SASS of the six kernels, each emitted beforehand by `comfuse emit post_layernorm --shape M=16384,K=1024,N=1024
# --schedule <one of the JSON files here> -o emit_<name>` (the SASS files are not kept: 1.3 MB each).
for d in emit_*; do [[ -n "$CUOBJ" ]] && $CUOBJ -sass $d/*.cubin > $O/p/sass-$(basename $d).txt 2>&1; done
ls $O/p | head -30
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
S=M=16384,K=1024,N=1024
summ() {  # name file rc
  echo "$1 rc $3 $(grep -E '^check' $2 | cut -c12-30) $(grep -E "^time" $2 | sed "s/(medians.*//; s/time  *//") | loop $(grep -E 'inputs ready +stage 0 elements' $2 | awk '{print $6}') main $(grep -E 'a tile.s mainloop' $2 | sed 's/.*mainloop //')" | tee -a $O/p/summary.txt
}
trs() {  # name schedule
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape $S --schedule "$(cat "$(dirname "$0")/$2.json")" --repeats 20 > $f 2>&1
  summ $1 $f $?; pack
}
for r in 1 2; do for v in coop coop_box coop_box_pack pp pp_box pp_box_pack; do trs $v-$r $v; done; done
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=pack_pairs_ COMFUSE_GPU_SHARD=0/6 timeout 120 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $O/p/gpu-tests-pack_pairs-0-6.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $O/p/gpu-tests-pack_pairs-0-6.log) fail $(grep -c '^FAIL \|Failure$' $O/p/gpu-tests-pack_pairs-0-6.log)" | tee -a $O/p/summary.txt
pack
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=box_reads_ COMFUSE_GPU_SHARD=0/4 timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $O/p/gpu-tests-box_reads-0-4.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $O/p/gpu-tests-box_reads-0-4.log) fail $(grep -c '^FAIL \|Failure$' $O/p/gpu-tests-box_reads-0-4.log)" | tee -a $O/p/summary.txt
pack
cat $O/p/summary.txt
