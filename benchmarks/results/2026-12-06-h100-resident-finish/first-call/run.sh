#!/usr/bin/env bash
# The call as run (fourteenth session, 2026-12-06 10:44 UTC, commit 5222c69), with OUTDIR as $1 from the
# repository root: an H200 was asked for; on any other card the call ran `benchmarks/device_plan.sh resident`
# of that commit (a quarter of Change 63's GPU-test variants, then the trace A/B of four winners with it).
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with it.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
grep -q H200 $O/p/device.txt && exit 0  # (an H200 was to run `device_plan.sh owed` instead)
timeout 570 benchmarks/device_plan.sh resident $O/p 2>&1 | tail -30 | tee -a $O/p/summary-resident.txt
