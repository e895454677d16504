#!/usr/bin/env bash
# Tests benchmarks/pack_binaries.sh on a build: every binary it lists is in the tarball at its build/ path,
# executable and smaller than the built one (stripped); the unpacked comfuse command runs; named binaries are
# packed alone (the timer test with its helper); a build without a binary stops it with that binary's path
# named, an unknown binary by its name, and a wrong call with its usage.
# Usage: benchmarks/test_pack_binaries.sh BUILD_DIR
set -euo pipefail
pack="$(cd "$(dirname "$0")" && pwd)/pack_binaries.sh"
build=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mapfile -t binaries < <(bash "$pack" --list)
[[ ${#binaries[@]} -ge 5 ]] || fail "--list printed ${#binaries[@]} paths"
bash "$pack" --build "$build" "$tmp/bin.tgz" >"$tmp/out.txt"
grep -q "${#binaries[@]} binaries" "$tmp/out.txt" || fail "summary line: $(cat "$tmp/out.txt")"
mkdir "$tmp/unpacked"
tar -xzf "$tmp/bin.tgz" -C "$tmp/unpacked"
[[ $(tar -tzf "$tmp/bin.tgz" | grep -vc '/$') -eq ${#binaries[@]} ]] || fail "the tarball holds other files"
for b in "${binaries[@]}"; do
  packed="$tmp/unpacked/build/$b"
  [[ -x $packed ]] || fail "$b is not in the tarball, or not executable"
  [[ $(stat -c %s "$packed") -lt $(stat -c %s "$build/$b") ]] || fail "$b is not stripped"
done
usage=$("$tmp/unpacked/build/src/cli/comfuse" 2>&1) || true
[[ $usage == *"usage: comfuse"* ]] || fail "the unpacked comfuse does not run: $usage"

bash "$pack" --build "$build" "$tmp/two.tgz" src/cli/comfuse tests/runtime/runtime_gpu_tests >/dev/null
[[ $(tar -tzf "$tmp/two.tgz" | grep -v '/$' | sort | tr '\n' ' ') == \
   "build/src/cli/comfuse build/tests/runtime/runtime_gpu_tests build/tests/runtime/runtime_timer_child " ]] ||
  fail "named binaries: $(tar -tzf "$tmp/two.tgz" | tr '\n' ' ')"
if bash "$pack" --build "$build" "$tmp/bad.tgz" src/cli/nothing 2>"$tmp/bad.txt"; then
  fail "an unknown binary was packed"
fi
grep -q "'src/cli/nothing' is not one of the binaries" "$tmp/bad.txt" ||
  fail "the unknown binary: $(cat "$tmp/bad.txt")"

mkdir -p "$tmp/partial/src/cli"
cp "$build/src/cli/comfuse" "$tmp/partial/src/cli/"
if bash "$pack" --build "$tmp/partial" "$tmp/partial.tgz" 2>"$tmp/err.txt"; then
  fail "a build without bench_suite was packed"
fi
grep -q "partial/benchmarks/bench_suite is missing" "$tmp/err.txt" || fail "the missing binary: $(cat "$tmp/err.txt")"
[[ ! -e $tmp/partial.tgz ]] || fail "a tarball was written for a partial build"
if bash "$pack" 2>"$tmp/usage.txt"; then fail "no arguments were accepted"; fi
grep -q "usage:" "$tmp/usage.txt" || fail "no usage for a wrong call"
echo "pack_binaries: ${#binaries[@]} binaries packed, stripped and runnable, two packed alone with the helper;" \
  "the unknown binary, the partial build and the wrong call refused"
