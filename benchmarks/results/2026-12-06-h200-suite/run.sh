#!/usr/bin/env bash
# H200 suite call: the fourteen rows replayed from tuning_logs/h200.jsonl (with the stash step's records of
# this session) beside cuBLAS, then PyTorch over the ten fused rows (LN-relu first), then the report.
set -uo pipefail
O=$1; mkdir -p $O/s
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/s/device.txt; date -u >> $O/s/device.txt
cat $O/s/device.txt
grep -q H200 $O/s/device.txt || { echo "not an H200"; exit 0; }
fused=gemm_layernorm_relu_M8192_K4096_N4096,gemm_softcap_softmax_M4096_K1024_N8192,post_layernorm_M16384_K1024_N1024
fused+=,post_layernorm_M16384_K4096_N1024,post_layernorm_M8192_K4096_N4096,post_layernorm_M8192_K1024_N4096
fused+=,post_rmsnorm_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_softmax_M4096_K1024_N8192
fused+=,gemm_softmax_M4096_K4096_N32000
gemms=gemm_M8192_K8192_N8192,gemm_M16384_K1024_N1024,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096
timeout 200 ./build/benchmarks/bench_suite $O/s/comfuse.json --repeats 50 --only $fused,$gemms --log tuning_logs/h200.jsonl > $O/s/bench.txt 2>&1
echo "bench exit $?"; tar -czf $O/all.tgz -C $O s
timeout 330 python3 benchmarks/torch_baselines.py $O/s/torch.json --only $fused --compile-budget 230 > $O/s/torch.txt 2>&1
echo "torch exit $?"
python3 benchmarks/report.py --comfuse $O/s/comfuse.json --torch $O/s/torch.json --out-prefix $O/s/suite --tune-log tuning_logs/h200.jsonl > $O/s/report.txt 2>&1
echo "report exit $?"
tar -czf $O/all.tgz -C $O s
tail -22 $O/s/bench.txt; tail -14 $O/s/torch.txt; tail -30 $O/s/report.txt
