#!/usr/bin/env bash
# The README's main job: build comfuse and show the post-LayerNorm workload (program, op graph, key).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/src/cli/comfuse show --list
echo
./build/src/cli/comfuse show post_layernorm --dot build/post_layernorm.dot
echo
./build/examples/example_post_layernorm
