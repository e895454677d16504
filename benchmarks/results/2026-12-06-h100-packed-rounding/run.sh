#!/usr/bin/env bash
# Twelfth session, fifth call: Change 57 (packed_rounding). The SASS instruction mix of the GEMM K1024 N1024
# winner without and with it; traces of that GEMM and of post-LN K1024 N1024's winner without and with it
# (interleaved, twice); then a third of the packed_rounding_ GPU-test variants.
set -uo pipefail
O=$1; P=$O/p; mkdir -p $P
S=$(dirname "$0")  # the schedules, beside this script
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $P/device.txt; date -u >> $P/device.txt
cat $P/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
for v in g1024 g1024_pk; do
  ./build/src/cli/comfuse emit gemm --shape M=16384,K=1024,N=1024 --schedule $S/$v.json -o $P/emit_$v > /dev/null 2>&1
  $CUOBJ -sass $P/emit_$v/*.cubin > $P/sass.txt 2>&1
  echo "sass $v: $(grep -oE ' (F2F[A-Z0-9.]*|F2FP[A-Z0-9._]*|ST[A-Z0-9.]*|STL) ' $P/sass.txt | sort | uniq -c | tr '\n' ' ')" | tee -a $P/summary.txt
  rm -rf $P/sass.txt $P/emit_$v
done
trace_row() {  # name workload shape schedule
  local f=$P/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace $2 --shape $3 --schedule "$(cat $S/$4.json)" --repeats 20 > $f 2>&1
  echo "trace $1 rc $?: $(grep -E '^check' $f | cut -c12-50) $(grep -E '^time' $f | sed 's/(medians.*//') $(grep -E '^kernels' $f) | $(grep -E 'first stage ready +mainloop end' $f | awk '{print "mainloop", $6}') $(grep -E 'stage 0 elements' $f | head -1 | awk '{print $1,$2,"->",$3,$4,$5,$6,$7}')" | tee -a $P/summary.txt
}
sh=M=16384,K=1024,N=1024
for r in 1 2; do
  trace_row gemm-$r gemm $sh g1024
  trace_row gemm_pk-$r gemm $sh g1024_pk
  trace_row pln-$r post_layernorm $sh pln1024
  trace_row pln_pk-$r post_layernorm $sh pln_pk
  pack
done
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=packed_rounding_ COMFUSE_GPU_SHARD=0/3 timeout 200 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $P/gpu-tests-packed_rounding-0-3.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $P/gpu-tests-packed_rounding-0-3.log) fail $(grep -c '^FAIL \|Failure$' $P/gpu-tests-packed_rounding-0-3.log)" | tee -a $P/summary.txt
pack
cat $P/summary.txt
