#!/usr/bin/env bash
# Twelfth session, first call: gelu-LN searched over bf16 stashes with the wide finish; the in-kernel cluster
# forms of post-LN K1024 N1024 with staged pairs; traces of four winners; Inductor five times on post-LN K1024 N1024.
set -uo pipefail
O=$1; P=$O/p; mkdir -p $P
S=$(dirname "$0")/..  # the schedules traced, beside the calls' folders
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $P/device.txt; date -u >> $P/device.txt
cat $P/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
H200=1; grep -q H200 $P/device.txt || H200=0
log=tuning_logs/h200.jsonl
trace_row() {  # name workload shape schedule
  local f=$P/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace $2 --shape $3 --schedule "$(cat $S/$4.json)" --repeats 20 > $f 2>&1
  echo "trace $1 rc $?: $(grep -E '^kernels|^time' $f | tr '\n' ' ' | cut -c1-200)" | tee -a $P/summary.txt
  grep -E 'mainloop end|stage 0 elements|end skew' $f | head -4 | tee -a $P/summary.txt
}
trace_row smx gemm_softmax M=4096,K=1024,N=8192 smx
trace_row cap gemm_softcap_softmax M=4096,K=1024,N=8192 cap
trace_row gelu gemm_gelu_layernorm M=16384,K=1024,N=4096 gelu
trace_row gemm1024 gemm M=16384,K=1024,N=1024 gemm1024
pack
gelu=gemm_gelu_layernorm_M16384_K1024_N4096
pln=post_layernorm_M16384_K1024_N1024
timeout 150 ./build/benchmarks/tune_suite $P/tune-gelu --trials 24 --only $gelu --fix bf16_stash=true,wide_finish=true > $P/tune-gelu.txt 2>&1
echo "tune gelu rc $?" | tee -a $P/summary.txt; tail -3 $P/tune-gelu.txt; pack
timeout 100 ./build/benchmarks/tune_suite $P/tune-cluster --trials 12 --only $pln --fix reduction=cluster,staged_pairs=true > $P/tune-cluster.txt 2>&1
echo "tune cluster rc $?" | tee -a $P/summary.txt; tail -3 $P/tune-cluster.txt; pack
cat $log $P/tune-gelu/*.jsonl $P/tune-cluster/*.jsonl > $P/merged.jsonl
timeout 90 ./build/benchmarks/bench_suite $P/bench.json --repeats 50 --only $gelu,$pln --log $P/merged.jsonl > $P/bench.txt 2>&1
echo "bench rc $?" | tee -a $P/summary.txt; grep -E "^(gemm|post)" $P/bench.txt | tee -a $P/summary.txt; pack
[[ $H200 == 1 ]] && for r in 1 2 3 4 5; do
  timeout 60 python3 benchmarks/torch_baselines.py $P/torch-$r.json --only $pln > $P/torch-$r.txt 2>&1
  echo "torch $r exit $? $(grep -E '^\[1/1]' $P/torch-$r.txt | tail -1)" | tee -a $P/summary.txt
  pack
done
cat $P/summary.txt
