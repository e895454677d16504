#!/usr/bin/env bash
# Packs the built binaries that a GPU machine runs (the comfuse command, the benchmark drivers, the GPU tests and
# the timer test's helper) into one tarball, stripped, each at its path under build/. Unpacked in the
# repository's root of a machine with the same CUDA Toolkit and driver, they run there without a build, e.g.
# `COMFUSE_REQUIRE_GPU=1 ./build/tests/codegen/gpu/codegen_gpu_tests` or `benchmarks/device_plan.sh`. The
# tarball is a few MB where the build folder is about 100.
# Usage: benchmarks/pack_binaries.sh OUT.tgz [BUILD_DIR]   (BUILD_DIR: default build/ of this tree)
#        benchmarks/pack_binaries.sh --list                 (the binaries' paths under the build folder)
set -euo pipefail
binaries=(src/cli/comfuse benchmarks/bench_suite benchmarks/tune_suite tests/codegen/gpu/codegen_gpu_tests
          tests/runtime/runtime_gpu_tests tests/runtime/runtime_timer_child tests/search/gpu/search_gpu_tests)
if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${binaries[@]}"
  exit 0
fi
[[ $# -ge 1 && $# -le 2 && ${1:-} != -* ]] || { echo "usage: $0 OUT.tgz [BUILD_DIR] | --list" >&2; exit 2; }
out=$(realpath -m "$1")
build=$(realpath -m "${2:-$(dirname "$0")/../build}")
for b in "${binaries[@]}"; do
  [[ -x $build/$b ]] || { echo "$0: $build/$b is missing or not executable: build first (scripts/build.sh)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in "${binaries[@]}"; do
  mkdir -p "$stage/build/$(dirname "$b")"
  strip -o "$stage/build/$b" "$build/$b"
done
tar -czf "$out" -C "$stage" build
echo "$out: ${#binaries[@]} binaries, $(du -h "$out" | cut -f1)"
