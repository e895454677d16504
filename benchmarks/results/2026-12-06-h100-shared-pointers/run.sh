#!/usr/bin/env bash
# The call as run (2026-12-06, 08:06 UTC): the `epilogue` step of benchmarks/device_plan.sh. Builds nothing:
# the binaries under build/ are a Release build of the tree as committed with this folder (2d8352b).
set -uo pipefail
benchmarks/device_plan.sh epilogue "$1"
