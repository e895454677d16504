#!/usr/bin/env bash
# On an H200: the owed stash step (search of the four post-LN rows over stash_in_slot, now with box_reads,
# bench beside cuBLAS, PyTorch). On another card: post-LN K1024 N1024 tuned over the stash-in-slot schedules
# (24 trials), benched beside cuBLAS, and PyTorch, in one call.
set -uo pipefail
O=$1; mkdir -p $O/p
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
cat $O/p/device.txt
if grep -q H200 $O/p/device.txt; then
  timeout 560 benchmarks/device_plan.sh stash $O/r 2>&1 | tail -20
  cp $O/r/stash.tgz $O/ ; rm -rf $O/r
  tar -czf $O/all.tgz -C $O p
  exit 0
fi
row=post_layernorm_M16384_K1024_N1024
timeout 200 ./build/benchmarks/tune_suite $O/p/tune --trials 24 --only $row --fix stash_in_slot=true > $O/p/tune.txt 2>&1
echo "tune exit $?"; tail -4 $O/p/tune.txt
cat tuning_logs/h200.jsonl $O/p/tune/h200.jsonl > $O/p/merged.jsonl
timeout 120 ./build/benchmarks/bench_suite $O/p/bench.json --repeats 50 --only $row --log $O/p/merged.jsonl > $O/p/bench.txt 2>&1
echo "bench exit $?"; tail -4 $O/p/bench.txt
timeout 200 python3 benchmarks/torch_baselines.py $O/p/torch.json --only $row > $O/p/torch.txt 2>&1
echo "torch exit $?"; tail -6 $O/p/torch.txt
rm -f $O/p/merged.jsonl
tar -czf $O/all.tgz -C $O p
