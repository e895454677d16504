#!/usr/bin/env bash
# One call (twenty-fifth session, 2026-12-07, about 15:05 UTC; an H200 was asked for, an H100 came). Builds
# nothing: tune_suite is from a Release build of main at 9e97d06 (Change 75: store_chunks searched for
# deferred rows that read no element-wise input), unpacked at its build/ path (benchmarks/pack_binaries.sh).
# The H200 log holds no winners for this card, so the step is the from-scratch A/B of device_plan.sh.
set -uo pipefail
OUT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
benchmarks/device_plan.sh chunked_ab "$OUT/plan"
