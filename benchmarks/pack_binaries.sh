#!/usr/bin/env bash
# Packs the built binaries that a GPU machine runs (the comfuse command, the benchmark drivers, the GPU tests and
# the timer test's helper) into one tarball, stripped, each at its path under build/. Unpacked in the
# repository's root of a machine with the same CUDA Toolkit and driver, they run there without a build, e.g.
# `COMFUSE_REQUIRE_GPU=1 ./build/tests/codegen/gpu/codegen_gpu_tests` or `benchmarks/device_plan.sh`. All of
# them come to about 7 MB where the build folder is about 100; name the ones a run needs to pack fewer.
# Usage: benchmarks/pack_binaries.sh [--build DIR] OUT.tgz [BINARY...]
#          BINARY: a path under the build folder from --list (default: all of them); DIR: default build/
#        benchmarks/pack_binaries.sh --list
set -euo pipefail
known=(src/cli/comfuse benchmarks/bench_suite benchmarks/tune_suite tests/codegen/gpu/codegen_gpu_tests
       tests/runtime/runtime_gpu_tests tests/runtime/runtime_timer_child tests/search/gpu/search_gpu_tests)
usage() {
  echo "usage: $0 [--build DIR] OUT.tgz [BINARY...] | --list" >&2
  exit 2
}
if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${known[@]}"
  exit 0
fi
build=$(dirname "$0")/../build
if [[ ${1:-} == --build ]]; then
  [[ $# -ge 2 ]] || usage
  build=$2
  shift 2
fi
[[ $# -ge 1 && $1 != -* ]] || usage
out=$(realpath -m "$1")
build=$(realpath -m "$build")
shift
binaries=("$@")
[[ ${#binaries[@]} -gt 0 ]] || binaries=("${known[@]}")
for b in "${binaries[@]}"; do
  [[ " ${known[*]} " == *" $b "* ]] || { echo "$0: '$b' is not one of the binaries of --list" >&2; exit 2; }
  [[ -x $build/$b ]] || {
    echo "$0: $build/$b is missing or not executable: build first (scripts/build.sh)" >&2
    exit 1
  }
done
# The timer test starts its helper from its own folder.
listed=" ${binaries[*]} "
if [[ $listed == *" tests/runtime/runtime_gpu_tests "* && $listed != *" tests/runtime/runtime_timer_child "* ]]; then
  binaries+=(tests/runtime/runtime_timer_child)
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for b in "${binaries[@]}"; do
  mkdir -p "$stage/build/$(dirname "$b")"
  strip -o "$stage/build/$b" "$build/$b"
done
tar -czf "$out" -C "$stage" build
echo "$out: ${#binaries[@]} binaries, $(du -h "$out" | cut -f1)"
