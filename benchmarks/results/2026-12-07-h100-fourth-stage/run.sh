#!/usr/bin/env bash
# One call (twenty-fifth session, 2026-12-07, 14:29-14:35 UTC; an H200 was asked for, an H100 came). Builds
# nothing: the comfuse command and the GPU tests are from a Release build of main at 9397582, unpacked at their
# build/ paths (benchmarks/pack_binaries.sh). What ran is the `fourth` step of benchmarks/device_plan.sh as of
# that commit (the step went with register_inputs, which the call refuted); commands.txt lists its commands.
set -uo pipefail
OUT=$1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
benchmarks/device_plan.sh fourth "$OUT/plan"
