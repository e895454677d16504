#!/usr/bin/env bash
# Cooperative 128 x 256 deferred forms of post-LN K1024 N1024 with four stages (the TMA store in chunks makes
# room beside them), against the three-stage stash-in-slot form; all with streaming hints.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
tr1() {  # name
  local f=$O/p/trace-$1.txt
  timeout 60 ./build/src/cli/comfuse trace post_layernorm --shape M=16384,K=1024,N=1024 --schedule "$(cat benchmarks/results/2026-12-05-h100-cooperative-four-stages/$1.json)" --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^check' $f | cut -c12-16) $(grep -E "^time" $f | sed "s/(medians.*//; s/time  *//") $(grep -E "^kernels" $f | sed "s/kernels *untraced //")" | tee -a $O/p/summary.txt
  grep -E "^CTAs|^ +(first stage ready +mainloop end|mainloop end|inputs ready|mainloop begin) " $f | tee -a $O/p/summary.txt
  pack
}
for v in co-slot co-4 co-4pf co-4ch co-4chpf co-3ch co-slot; do tr1 $v; done
cat $O/p/device.txt
