#!/usr/bin/env bash
# Twelfth session, third call: Change 56 (stash_terms with tma_store). Its GPU-test variants first, then
# traces of the two K1024 softmax rows' shipped winners beside the same schedules with the TMA store
# (interleaved, twice), then a search of the two rows with both knobs fixed and a bench of the result.
set -uo pipefail
O=$1; P=$O/p; mkdir -p $P
S=$(dirname "$0")/..  # the schedules traced, beside the calls' folders
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $P/device.txt; date -u >> $P/device.txt
cat $P/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
log=tuning_logs/h200.jsonl
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=terms_tma_store_ timeout 240 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $P/gpu-tests-terms_tma_store.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $P/gpu-tests-terms_tma_store.log) fail $(grep -c '^FAIL \|Failure$' $P/gpu-tests-terms_tma_store.log)" | tee -a $P/summary.txt
pack
trace_row() {  # name workload shape schedule
  local f=$P/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace $2 --shape $3 --schedule "$(cat $S/$4.json)" --repeats 20 > $f 2>&1
  echo "trace $1 rc $?: $(grep -E '^check' $f | cut -c12-40) $(grep -E '^kernels' $f) | $(grep -E 'first stage ready +mainloop end' $f | awk '{print "mainloop", $6}') $(grep -E 'stage 0 elements' $f | head -1 | awk '{print $1,$2,"->",$3,$4,$5,$6,$7}')" | tee -a $P/summary.txt
}
sm=M=4096,K=1024,N=8192
for r in 1 2; do
  trace_row smx-$r gemm_softmax $sm smx
  trace_row smx_terms_tma-$r gemm_softmax $sm smx_terms_tma
  trace_row cap-$r gemm_softcap_softmax $sm cap
  trace_row cap_terms_tma-$r gemm_softcap_softmax $sm cap_terms_tma
  pack
done
smx=gemm_softmax_M4096_K1024_N8192; cap=gemm_softcap_softmax_M4096_K1024_N8192
timeout 150 ./build/benchmarks/tune_suite $P/tune --trials 16 --only $smx,$cap --fix stash_terms=true,tma_store=true > $P/tune.txt 2>&1
echo "tune rc $?" | tee -a $P/summary.txt; grep -E "best|FAILED" $P/tune.txt | tee -a $P/summary.txt; pack
cat $log $P/tune/*.jsonl > $P/merged.jsonl
timeout 60 ./build/benchmarks/bench_suite $P/bench.json --repeats 50 --only $smx,$cap --log $P/merged.jsonl > $P/bench.txt 2>&1
echo "bench rc $?" | tee -a $P/summary.txt; grep -E "^gemm" $P/bench.txt | tee -a $P/summary.txt; pack
rm -f $P/merged.jsonl; pack
cat $P/summary.txt
