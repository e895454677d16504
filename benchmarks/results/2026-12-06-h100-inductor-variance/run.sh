#!/usr/bin/env bash
# Inductor's variance on post-LN K1024 N1024: three PyTorch runs in a row (each a fresh process, Inductor's
# caches disabled), then comfuse's replay of the shipped log.
set -uo pipefail
O=$1; mkdir -p $O/v
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,driver_version --format=csv > $O/v/device.txt; date -u >> $O/v/device.txt
row=post_layernorm_M16384_K1024_N1024
for r in 1 2 3; do
  timeout 60 python3 benchmarks/torch_baselines.py $O/v/torch-$r.json --only $row > $O/v/torch-$r.txt 2>&1
  echo "torch $r exit $? $(tail -1 $O/v/torch-$r.txt)"
done
timeout 40 ./build/benchmarks/bench_suite $O/v/bench.json --repeats 50 --only $row --log tuning_logs/h200.jsonl > $O/v/bench.txt 2>&1
