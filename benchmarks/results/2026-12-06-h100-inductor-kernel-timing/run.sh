#!/usr/bin/env bash
# The call as run (sixteenth session, 2026-12-06 15:02 UTC; an H200 was asked for and an H100 came).
# Builds nothing (PyTorch and Triton are the device machine's).
set -uo pipefail
O=$1/inductor; mkdir -p $O
for i in 1 2 3; do
  timeout 150 python3 benchmarks/torch_baselines.py $O/postln-$i.json --only post_layernorm_M16384_K1024_N1024 \
    > $O/postln-$i.txt 2>&1
  echo "run $i exit $?"; tail -2 $O/postln-$i.txt
done
timeout 200 python3 benchmarks/torch_baselines.py $O/others.json \
  --only gemm_softmax_M4096_K1024_N8192,post_layernorm_M8192_K1024_N4096 > $O/others.txt 2>&1
echo "others exit $?"; tail -3 $O/others.txt
