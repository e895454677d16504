#!/usr/bin/env bash
# The two calls as run (seventeenth session, 2026-12-06, 18:24 and 18:31 UTC; an H200 was asked for and an
# H100 came), at ba57408. Builds nothing: the binaries under build/ are a Release build of that tree.
set -uo pipefail
O=$1
# First call: benchmarks/device_plan.sh cluster_slot (its commands, as commands.txt lists them).
benchmarks/device_plan.sh cluster_slot "$O"
# Third call of the session, on the same machine: the cluster form with the vectors unstaged alone (two slots,
# three stages), beside one slot with four stages, the log's cluster form and the row's winner (traces-vectors/).
timeout 200 benchmarks/trace_rows.sh --no-gpu-test --cluster-set unstaged_vectors=true \
  --cluster-set unstaged_vectors=true,stages=4,one_input_slot=true "$O/t" tuning_logs/h200.jsonl \
  post_layernorm_M16384_K1024_N1024
