#!/usr/bin/env bash
# Nsight Compute of the cooperative 128 x 256 form with the stash in the slot (post-LN K1024 N1024): where its
# 3.9 us element loop goes.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
timeout 300 benchmarks/profile_row.sh $O/p benchmarks/results/2026-12-05-h100-in-kernel-shared-stash/profile-coop/record.jsonl post_layernorm_M16384_K1024_N1024 'comfuse_mm_7936494801f5$' > $O/p/profile.txt 2>&1
echo "profile rc $?"
rm -f $O/p/*.ncu-rep
gzip -f $O/p/*.sass.csv
tar -czf $O/all.tgz -C $O p
tail -60 $O/p/profile.txt
