#!/usr/bin/env bash
# The exchange wait: the global exchange's poll with acquiring loads (as built) against relaxed polls and one
# acquire fence after (a scratch build), beside the DSMEM cluster form; post-LN K1024 N1024 traces.
set -uo pipefail
O=$1; mkdir -p $O/p
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/p/device.txt; date -u >> $O/p/device.txt
S=M=16384,K=1024,N=1024
tr() {  # name binary schedule-file
  local f=$O/p/trace-$1.txt
  timeout 60 $2/comfuse trace post_layernorm --shape $S --schedule "$(cat $(dirname "$0")/../$3)" --repeats 20 > $f 2>&1
  echo "$1 rc $? $(grep -E '^check' $f | cut -c1-40) $(grep -E '^time' $f | sed 's/(medians.*//; s/time  *//') | sent->combined $(grep '^  stage 0 sent' $f | awk '{print $8}') | elements->sent $(grep 'stage 0 elements  *stage 0 sent' $f | awk '{print $8}') | mainloop $(grep 'first stage ready  *mainloop end' $f | awk '{print $7}')" | tee -a $O/p/summary.txt
}
tr global-acquire-3st bin2 schedule-global-3st.json
tr global-relaxed-3st bin3 schedule-global-3st.json
tr dsmem-3st bin2 schedule-dsmem-3st.json
tr global-relaxed-4st bin3 schedule-global-4st-unstaged.json
tr global-acquire-3st-2 bin2 schedule-global-3st.json
tr global-relaxed-3st-2 bin3 schedule-global-3st.json
tar -czf $O/all.tgz -C $O p
