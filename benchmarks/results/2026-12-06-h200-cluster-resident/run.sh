#!/usr/bin/env bash
# The call as run (eighteenth session, 2026-12-06, 20:06 UTC, an H200), at 20dd66a. Builds nothing: the
# binaries under build/ are a Release build of that tree.
set -uo pipefail
benchmarks/device_plan.sh cluster_slot "$1"
