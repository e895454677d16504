#!/usr/bin/env bash
# Configures and builds comfuse (Release) into build/. Used by test.sh and demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${COMFUSE_BUILD_TYPE:-Release}" >/dev/null
cmake --build build --parallel "$(nproc)"
