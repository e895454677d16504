#!/usr/bin/env bash
# Twelfth session, second call: the softmax rows' bf16 stash stored by TMA, traced beside the shipped
# stash_terms winners, then searched (24 trials a row, bf16_stash and tma_store fixed); on an H200 also
# gelu-LN's bf16-stash search and Inductor five times on post-LN K1024 N1024.
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
  echo "trace $1 rc $?: $(grep -E '^kernels' $f) | $(grep -E 'first stage ready +mainloop end' $f | awk '{print "mainloop", $6}') $(grep -E 'stage 0 elements' $f | head -1 | awk '{print $1,$2,"->",$3,$4,$5,$6,$7}')" | tee -a $P/summary.txt
}
sm=M=4096,K=1024,N=8192
trace_row smx gemm_softmax $sm smx
trace_row smx_tma gemm_softmax $sm smx_tma
trace_row cap gemm_softcap_softmax $sm cap
trace_row cap_tma gemm_softcap_softmax $sm cap_tma
trace_row gelu_bf16 gemm_gelu_layernorm M=16384,K=1024,N=4096 gelu_bf16
pack
smx=gemm_softmax_M4096_K1024_N8192; cap=gemm_softcap_softmax_M4096_K1024_N8192
gelu=gemm_gelu_layernorm_M16384_K1024_N4096; pln=post_layernorm_M16384_K1024_N1024
timeout 200 ./build/benchmarks/tune_suite $P/tune-smx --trials 24 --only $smx,$cap --fix bf16_stash=true,tma_store=true > $P/tune-smx.txt 2>&1
echo "tune smx rc $?" | tee -a $P/summary.txt; grep best $P/tune-smx.txt | tee -a $P/summary.txt; pack
rows=$smx,$cap
if [[ $H200 == 1 ]]; then
  timeout 100 ./build/benchmarks/tune_suite $P/tune-gelu --trials 24 --only $gelu --fix bf16_stash=true,wide_finish=true > $P/tune-gelu.txt 2>&1
  echo "tune gelu rc $?" | tee -a $P/summary.txt; grep best $P/tune-gelu.txt | tee -a $P/summary.txt; rows+=,$gelu
fi
cat $log $P/tune-*/*.jsonl > $P/merged.jsonl
timeout 90 ./build/benchmarks/bench_suite $P/bench.json --repeats 50 --only $rows --log $P/merged.jsonl > $P/bench.txt 2>&1
echo "bench rc $?" | tee -a $P/summary.txt; grep -E "^gemm" $P/bench.txt | tee -a $P/summary.txt; pack
[[ $H200 == 1 ]] && for r in 1 2 3 4 5; do
  timeout 60 python3 benchmarks/torch_baselines.py $P/torch-$r.json --only $pln > $P/torch-$r.txt 2>&1
  echo "torch $r exit $? $(grep -E '^\[1/1]' $P/torch-$r.txt | tail -1)" | tee -a $P/summary.txt
  pack
done
cat $P/summary.txt
