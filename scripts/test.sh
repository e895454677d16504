#!/usr/bin/env bash
# The README's test command: set-up, configure, build, run every test (GPU tests skip without a device).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)" --timeout 600
