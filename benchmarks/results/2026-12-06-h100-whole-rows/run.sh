#!/usr/bin/env bash
# The call as run (sixteenth session, 2026-12-06 14:59 UTC; an H200 was asked for and an H100 came):
# `benchmarks/device_plan.sh rows OUT` at 758272c. Builds nothing: the binaries under build/ are a Release
# build of that tree.
set -uo pipefail
timeout 540 benchmarks/device_plan.sh rows "$1" 2>&1 | tail -30
