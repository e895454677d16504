#!/usr/bin/env bash
# Change 63's isolation probe (the NOTES proposal "Change 63's finish warps fed by bulk copies", step 1), on
# any GPU: post-LN M8192 K1024 N4096 traced with the log's H200 winner of 2026-12-06 (ping-pong 64 x 256,
# deferred, bf16 stash), first as it is (main kernel + finish kernel), then with resident_finish and each
# COMFUSE_RESIDENT_PROBE variant: 0 the row code, 1 the draws and polls alone, 2 the rows' bytes alone, 3 the
# rows' arithmetic alone. Variants 1-3 write wrong outputs on purpose (comfuse trace says WRONG and exits 3);
# their traces still time the mainloop beside them. Prints each run's tile mainloop time last.
# Usage: benchmarks/probes/resident_probe.sh COMFUSE OUTDIR
#   COMFUSE: a comfuse built at 5222c69 with benchmarks/probes/change63-isolation.patch applied (git am)
set -uo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 COMFUSE OUTDIR" >&2; exit 2; }
comfuse=$1
mkdir -p "$2"
out=$(realpath "$2")
base='{"bf16_stash":true,"bk":64,"bm":64,"bn":256,"box_reads":true,"carried":"l2_stash","cluster_n":1,'
base+='"interior_tiles":true,"multicast_b":true,"one_input_slot":true,"one_pass_variance":true,"persistent":true,'
base+='"raster_group_m":8,"reduction":"deferred","staged_pairs":true,"stages":4,"stash_in_slot":true,'
base+='"tma_inputs":true,"tma_store":true,"vector_loads":true,"warp_roles":"ping_pong","wide_finish":true}'
resident=${base%\}},\"resident_finish\":true\}
run() {  # NAME PROBE SCHEDULE
  COMFUSE_RESIDENT_PROBE=$2 "$comfuse" trace post_layernorm --shape M=8192,K=1024,N=4096 --schedule "$3" \
    --json "$out/$1.json" >"$out/$1.txt" 2>"$out/$1.err"
  echo "$1: exit $?"
}
run deferred 0 "$base"
for probe in 1 2 3 0; do run "resident-$probe" $probe "$resident"; done
run deferred-again 0 "$base"
printf '%-16s %s\n' run "trace summary (a tile's mainloop, span, end skew; untraced time)"
for name in deferred resident-1 resident-2 resident-3 resident-0 deferred-again; do
  printf '%-16s %s | %s | %s\n' "$name" "$(grep -m1 '^CTAs ' "$out/$name.txt" | sed -E 's/^CTAs [0-9]+, //')" \
    "$(grep -m1 '^time ' "$out/$name.txt" | sed -E 's/^time +//')" "$(grep -m1 '^check ' "$out/$name.txt")"
done
