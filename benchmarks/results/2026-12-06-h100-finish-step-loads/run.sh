#!/usr/bin/env bash
# The call as run (fourteenth session, 2026-12-06 10:25 UTC): an H200 was asked for; on any other card the
# call ran `benchmarks/device_plan.sh steploads` (Change 62's GPU-test variants in a fifth, then the trace A/B).
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
grep -q H200 $O/p/device.txt && exit 0  # (an H200 was to run `device_plan.sh owed` instead)
timeout 570 benchmarks/device_plan.sh steploads $O/p 2>&1 | tail -30 | tee -a $O/p/summary-steploads.txt
