#!/usr/bin/env bash
# The owed GPU work of benchmarks/NOTES.md ("For the next device session"), in steps short enough that a call
# taken back part-way loses one step only. Each step writes under OUTDIR/<step>/ and leaves OUTDIR/<step>.tgz
# (its whole folder) even when a command in it failed, then prints its last table.
# Usage: benchmarks/device_plan.sh STEP OUTDIR [LOG]   (LOG: default tuning_logs/h200.jsonl)
#   trace     benchmarks/trace_rows.sh: the traced kernels' GPU test and the fused rows' phase traces (~4 min)
#   runtime   the launch and timer GPU tests (fills and uploads before launches; two kernels a run), then
#             wide_finish's A/B on post-LN K = 1024 N = 1024 and reverse_finish's over the ten deferred rows
#             (the first half of its GPU-test variants); leaves runtime/m2.jsonl, LOG with both A/Bs' records
#             (~6 min)
#   keep      stash_evict_last's A/B over the ten rows; LOG should be the runtime step's m2.jsonl, brought
#             back and put in the tree (a device machine keeps nothing between calls) (~5 min)
#   profile   Nsight Compute of the K = 1024 GEMM, ours and cuBLAS's (~3 min)
#   chunks    store_chunks (Change 44): its GPU-test variants, a search of the six GEMM rows over the TMA
#             store in chunks, then those rows from LOG with the search's records appended, beside cuBLAS
#             (~6 min)
#   inplace   the TMA store over the staged residual (Change 45): its GPU-test variants, then a search of the
#             post-LN N = 1024 rows over the cluster forms that store so, and those rows with its records
#             (~6 min)
#   slot      the deferred form's inputs staged in one slot (Change 46): its GPU-test variants of post-LN
#             and the softcapped softmax (the others passed on an H100), then a search of the post-LN K = 1024
#             rows over the deferred forms with four stages that stage so, and those rows with its records
#             (~6 min; on an H100, which the log's records do not match, its trace A/B was
#             `benchmarks/trace_rows.sh --set tma_inputs=true,one_input_slot=true OUT LOG ROW...`)
#   pairs     staged inputs read in pairs (Change 47): its GPU-test variants of post-LN and RMSNorm, then, on
#             any card, the trace A/B of the post-LN K = 1024 rows' winners staged in one slot without and
#             with pairs, and of RMSNorm's winner (staged already) with pairs (~7 min)
#   stash     the stash over the staged residual (Change 48), which its H100 run checked: a search of the four
#             post-LN rows over the schedules with it (the streaming hints of Change 50 among them), those rows
#             with its records beside cuBLAS, and PyTorch for post-LN K = 1024 N = 1024 (~8 min)
#   forms     the forms the H100 found faster on 2026-12-06 (twelfth session), searched on this card: gelu-LN
#             over bf16 stashes with the wide finish (24 trials), the three softmax rows over the terms stored
#             by TMA (Change 56; 16 trials), then those rows from LOG with the searches' records appended
#             (OUTDIR/forms/merged.jsonl), beside cuBLAS (~5 min)
#   epilogue  the epilogue's instructions (Changes 57 and 58): the GPU-test variants with shared pointers (the
#             packed roundings' passed on an H100), then the trace A/B of the GEMM and post-LN K = 1024 N = 1024
#             winners with packed roundings, and with shared pointers as well (~5 min)
#   refined   the refinements in the search (Change 59): the suite's four GEMM rows searched again (16 trials
#             each), every candidate with packed roundings and shared pointers, then those rows from LOG with
#             the search's records appended (OUTDIR/refined/merged.jsonl), beside cuBLAS (~6 min)
#   owed      forms, then refined over forms' merged log, in one call (~7 min, estimated from the steps'): leaves
#             OUTDIR/owed/merged.jsonl, LOG with both steps' records appended
#   reduce    the finish kernel reducing its rows from the stash (Change 64): its GPU-test variants of the
#             post-LN, RMSNorm and row-max workloads, then the trace A/B of four norm rows' winners with it (~6 min)
#   finish_ab the finish kernel reducing rows its wide walk keeps in registers (Changes 64 and 66), now
#             searched: an A/B of each post-LN row's winner (all four finish wide over a bf16 stash) with
#             finish_reductions, then those rows from LOG with its records appended
#             (OUTDIR/finish_ab/merged.jsonl), beside cuBLAS (~3 min; on an H200, whose records the log holds)
#   rows      whole rows in one CTA (N = 1024: a 64-row block's eight 128-column tiles kept in its shared memory
#             as bf16, reduced in the CTA, no cluster and no finish kernel): a search of the two post-LN N = 1024
#             rows over those schedules (12 trials each), then the rows from LOG and from the search's records
#             alone, each beside cuBLAS, in the same call (~4 min; any card)
#   cluster_slot  the cluster form's vectors resident in shared memory (Change 69, after Change 68's one slot):
#             its GPU-test variants (resident_vectors_), then post-LN K = 1024 N = 1024 traced: its winner, the
#             log's fastest cluster form, that form with its vectors resident, and with them resident, the
#             residual in one slot and a fourth stage (~5 min; any card)
#   starts    RMSNorm and LN-relu (Changes 70 and 71): a search over bf16_stash, wide_finish and multicast_b
#             fixed, and an open one starting from LOG's winners (--start-log), 24 trials each; then the rows
#             from LOG, from LOG with each search's records appended (OUTDIR/starts/fixed.jsonl, open.jsonl),
#             each beside cuBLAS (~4 min; on an H200, whose winners LOG holds)
#   chunked   the deferred rows without a residual, whose stash or terms may leave in chunks (Change 73's
#             outcome): an open search from LOG's winners (--start-log, 24 trials a row, each row resuming from
#             its own winner: Change 78) of the softmax N = 8192,
#             softcapped softmax, RMSNorm, LN-relu and gelu-LN rows, then those rows from LOG and from LOG with
#             the search's records appended (OUTDIR/chunked/open.jsonl), each beside cuBLAS (~7 min; on an H200,
#             whose winners LOG holds)
#   chunked_pair  Change 73's pair measured by the tuner: an A/B (--ab store_chunks) of each winner LOG holds
#             for the five deferred rows without a residual that the chunked step searches (softmax N = 32000,
#             level on the H100, is left out), without the chunks, with them, and with them and the stage they
#             free, then those rows from LOG and from LOG with the A/B's records appended
#             (OUTDIR/chunked_pair/ab.jsonl), each beside cuBLAS (~3 min; on an H200, whose winners LOG holds)
#   chunked_ab  the same space on a card LOG has no winners for: searches from scratch of the softmax N = 8192,
#             softcapped softmax and RMSNorm rows, 24 trials each, with the chunks and without
#             (--fix store_chunks=false), each printing its row's best (~6 min; any card)
#   persistent  the finish kernel on a persistent grid (Change 72): a device copy of the finish kernels' bytes
#             (benchmarks/copy_probe.py), the GPU-test variants the H100 call did not reach (post-LN, softmax,
#             softcapped softmax, gelu-LN), then the trace A/B of the five K = 1024 deferred rows' winners
#             with persistent_finish (~6 min; any card, an H200 for the timings issue 7 counts)
#   model_scratch  Change 79's cost model against the one before it: searches from scratch (24 trials a row, no
#             log) of post-LN K = 4096 N = 4096, RMSNorm, LN-relu, the softmax N = 8192 and the softcapped
#             softmax, by OLD_TUNE_SUITE (a tune_suite built at e46f03a, unpacked outside build/) and by
#             build/'s, each printing its rows' bests (~6 min; an H200 for the prediction in NOTES)
#   rounding  Change 81 (a wrong answer rules out only the rounding knobs no correct record had on): the
#             softmax N = 8192 searched as on 2026-12-07 at 23:16 UTC (24 trials from LOG's records before
#             that call) by OLD_TUNE_SUITE (a tune_suite built before Change 81, unpacked outside build/) and
#             by build/'s; then the softmax N = 32000, whose search of 2026-12-06 a wrong answer cut short the
#             same way, searched from LOG's winners (24 trials) and replayed from LOG and from LOG with the
#             search's records (OUTDIR/rounding/n32000.jsonl), each beside cuBLAS (~5 min; on an H200, whose
#             winners LOG holds)
#   cluster_shared  the softmax N = 8192 on a cluster of eight CTAs whose bf16 stash stays in shared memory
#             (no finish kernel; none of these schedules has an H200 record): a search over them alone (--fix
#             reduction=cluster,carried=shared, 12 trials), then the row from LOG and from LOG with the search's
#             records appended (OUTDIR/cluster_shared/search.jsonl), beside cuBLAS (~3 min; an H200 for the
#             prediction in NOTES)
#   handoff   the ping-pong mainloop handed over before its last group retires (Change 82, `early_handoff`):
#             its GPU-test variants of five workloads, then the trace A/B of seven rows' fastest ping-pong
#             records in LOG (OUTDIR/handoff/ping_pong.jsonl, LOG's ping-pong records alone) without and with
#             it (~6 min; any card, an H200 for the records' own timings)
# Builds nothing: the binaries come from build/ (benchmarks/pack_binaries.sh packs them for a GPU machine).
set -uo pipefail

[[ $# -ge 2 && $# -le 3 ]] || {
  steps=trace\|runtime\|keep\|profile\|chunks\|inplace\|slot\|pairs\|stash\|forms\|epilogue\|refined\|owed\|reduce\|rows\|finish_ab
  steps+=\|cluster_slot\|starts\|persistent\|chunked\|chunked_pair\|chunked_ab\|model_scratch
  steps+=\|rounding\|cluster_shared\|handoff
  echo "usage: $0 $steps OUTDIR [LOG]" >&2
  exit 2
}
step=$1
mkdir -p "$2/$step"
root=$(realpath "$2")
out="$root/$step"
log=$(realpath "${3:-$(dirname "$0")/../tuning_logs/h200.jsonl}")
self=$(realpath "$0")  # for the steps made of steps
cd "$(dirname "$0")/.."
deferred_rows=post_layernorm_M16384_K1024_N1024,post_layernorm_M16384_K4096_N1024,post_layernorm_M8192_K4096_N4096
deferred_rows+=,post_layernorm_M8192_K1024_N4096,post_rmsnorm_M8192_K4096_N4096,gemm_layernorm_relu_M8192_K4096_N4096
deferred_rows+=,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_softmax_M4096_K1024_N8192
deferred_rows+=,gemm_softmax_M4096_K4096_N32000,gemm_softcap_softmax_M4096_K1024_N8192

gemm_rows=gemm_M16384_K1024_N1024,gemm_M8192_K1024_N4096,gemm_M4096_K1024_N8192,gemm_M16384_K1024_N4096
gemm_rows+=,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096

status=0
# The GPU test's variants of a knob (cases labelled PREFIX; of the workloads named, comma-separated, or of
# all), under a 200 s limit, and their count. The exit status tells a run the limit stopped (124: a hang, or
# too many cases) from one that passed.
gpu_variants() {
  local log="$out/gpu-tests-${1%_}.log" saved=$status rc filter='Workloads/FusedKernelGpuTest.*'
  [[ -z ${2:-} ]] || filter=$(sed -E 's#([^,]+)#Workloads/FusedKernelGpuTest.*/\1#g; s#,#:#g' <<<"$2")
  status=0
  run env COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES="$1" timeout 200 \
    ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter="$filter" >"$log" 2>&1
  rc=$status
  [[ $rc -ne 0 ]] || status=$saved
  echo "$1 variants: $(grep -c '^ok ' "$log") within the tolerance, $(grep -c '^FAIL \|Failure$' "$log")" \
    "failures, exit $rc$([[ $rc -eq 124 ]] && echo ': stopped by the 200 s limit')"
}

# A search of ROWS over the schedules with FIXES (tune_suite --fix) in TRIALS trials, then those rows from LOG
# with the search's records appended (OUTDIR/merged.jsonl), beside cuBLAS; prints the last LINES of that.
fixed_search() {  # ROWS TRIALS FIXES LINES
  run ./build/benchmarks/tune_suite "$out/tune" --trials "$2" --only "$1" --fix "$3" >"$out/tune.txt" 2>&1
  cat "$log" "$out/tune/tuning.jsonl" >"$out/merged.jsonl"
  run ./build/benchmarks/bench_suite "$out/bench.json" --repeats 50 --only "$1" --log "$out/merged.jsonl" \
    >"$out/bench.txt" 2>&1
  tail -"$4" "$out/bench.txt"
}

# ROWS (comma-separated) from LOG and from LOG with each SEARCH's records appended (OUTDIR/SEARCH.jsonl, from
# OUTDIR/SEARCH/tuning.jsonl), each beside cuBLAS; prints the last lines of each.
bench_searches() {  # ROWS SEARCH...
  local rows=$1 search bench
  shift
  run ./build/benchmarks/bench_suite "$out/shipped.json" --repeats 50 --only "$rows" --log "$log" \
    >"$out/bench-shipped.txt" 2>&1
  for search in "$@"; do
    cat "$log" "$out/$search/tuning.jsonl" >"$out/$search.jsonl"
    run ./build/benchmarks/bench_suite "$out/$search.json" --repeats 50 --only "$rows" --log "$out/$search.jsonl" \
      >"$out/bench-$search.txt" 2>&1
  done
  for bench in shipped "$@"; do echo "== $bench"; grep -v '^workload' "$out/bench-$bench.txt" | tail -6; done
}

old_tune_suite() {  # CHANGE: the path of OLD_TUNE_SUITE, a tune_suite built before that change; fails when unset
  [[ -x ${OLD_TUNE_SUITE:-} ]] || {
    echo "$step: OLD_TUNE_SUITE must name a tune_suite built before Change $1" >&2
    return 2
  }
  realpath "$OLD_TUNE_SUITE"
}

log_where() {  # CONDITION: LOG's records for which the Python expression holds (of r, the record), as lines
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if eval(sys.argv[2]): sys.stdout.write(line)' "$log" "$1"
}

run() {  # a command of the step; a failure is remembered, the step goes on
  echo "+ $*" >>"$out/commands.txt"
  "$@" || { status=$?; echo "step $step: '$*' exited $status" | tee -a "$out/commands.txt"; }
}

case $step in
  trace)
    run benchmarks/trace_rows.sh "$out/traces" "$log"
    ;;
  runtime)
    run env COMFUSE_REQUIRE_GPU=1 ./build/tests/runtime/runtime_gpu_tests \
      --gtest_filter='LaunchTest.*:TimerTest.*' >"$out/runtime-gpu-tests.log" 2>&1
    grep -E '^\[  (PASSED|FAILED) ' "$out/runtime-gpu-tests.log"
    run benchmarks/ab_knob.sh "$out/ab-wide" wide_finish post_layernorm_M16384_K1024_N1024 0 "$log"
    cat "$log" "$out/ab-wide/ab/tuning.jsonl" >"$out/m1.jsonl"
    run env COMFUSE_GPU_SHARD=0/2 benchmarks/ab_knob.sh "$out/ab-reverse" reverse_finish "$deferred_rows" 80 \
      "$out/m1.jsonl"
    cat "$out/m1.jsonl" "$out/ab-reverse/ab/tuning.jsonl" >"$out/m2.jsonl"
    ;;
  keep)
    run env COMFUSE_GPU_SHARD=0/2 benchmarks/ab_knob.sh "$out/ab-keep" stash_evict_last "$deferred_rows" 80 "$log"
    cat "$log" "$out/ab-keep/ab/tuning.jsonl" >"$out/m3.jsonl"
    ;;
  profile)
    run benchmarks/profile_row.sh "$out/ours" "$log" gemm_M16384_K1024_N1024
    run benchmarks/profile_row.sh "$out/cublas" "$log" gemm_M16384_K1024_N1024 'nvjet|sm90|cutlass|xmma'
    rm -f "$out"/*/*.ncu-rep  # the text pages hold what is read; the reports are large
    ;;
  chunks)
    gpu_variants store_chunks_
    fixed_search "$gemm_rows" 10 tma_store=true,store_chunks=true,persistent=true 12
    ;;
  inplace)
    gpu_variants tma_store_in_place_
    fixed_search post_layernorm_M16384_K1024_N1024,post_layernorm_M16384_K4096_N1024 12 \
      tma_store=true,tma_inputs=true,persistent=true,reduction=cluster 8
    ;;
  slot)
    # The workloads whose variants the H100 run of 2026-12-05 (sixth session) did not reach.
    gpu_variants one_input_slot_ post_layernorm,gemm_softcap_softmax
    fixed_search post_layernorm_M16384_K1024_N1024,post_layernorm_M8192_K1024_N4096 12 \
      reduction=deferred,tma_inputs=true,one_input_slot=true,stages=4 8
    ;;
  pairs)
    gpu_variants staged_pairs_ post_layernorm,post_rmsnorm
    k1024=(post_layernorm_M16384_K1024_N1024 post_layernorm_M8192_K1024_N4096)
    run benchmarks/trace_rows.sh --set tma_inputs=true,one_input_slot=true "$out/one-slot" "$log" "${k1024[@]}"
    run benchmarks/trace_rows.sh --set tma_inputs=true,one_input_slot=true,staged_pairs=true --no-gpu-test \
      "$out/pairs" "$log" "${k1024[@]}"
    run benchmarks/trace_rows.sh --set staged_pairs=true --no-gpu-test "$out/rmsnorm" "$log" \
      post_rmsnorm_M8192_K4096_N4096
    ;;
  stash)
    # The fastest forms on the H100: the post-LN rows over the schedules that write the stash over the staged
    # residual (cooperative 128 x 256 or ping-pong 64 x 256, one slot), 24 trials a row as the search's finding
    # asks; then, with the search's records, PyTorch for the row slower than Inductor in the same call.
    post_ln=post_layernorm_M16384_K1024_N1024,post_layernorm_M8192_K1024_N4096
    post_ln+=,post_layernorm_M16384_K4096_N1024,post_layernorm_M8192_K4096_N4096
    fixed_search "$post_ln" 24 stash_in_slot=true 6
    run python3 benchmarks/torch_baselines.py "$out/torch.json" --only post_layernorm_M16384_K1024_N1024 \
      >"$out/torch.txt" 2>&1
    tail -6 "$out/torch.txt"
    ;;
  forms)
    gelu=gemm_gelu_layernorm_M16384_K1024_N4096
    softmax=gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192,gemm_softmax_M4096_K4096_N32000
    run ./build/benchmarks/tune_suite "$out/tune-gelu" --trials 24 --only "$gelu" \
      --fix bf16_stash=true,wide_finish=true >"$out/tune-gelu.txt" 2>&1
    run ./build/benchmarks/tune_suite "$out/tune-softmax" --trials 16 --only "$softmax" \
      --fix stash_terms=true,tma_store=true >"$out/tune-softmax.txt" 2>&1
    cat "$log" "$out/tune-gelu/tuning.jsonl" "$out/tune-softmax/tuning.jsonl" >"$out/merged.jsonl"
    run ./build/benchmarks/bench_suite "$out/bench.json" --repeats 50 --only "$gelu,$softmax" \
      --log "$out/merged.jsonl" >"$out/bench.txt" 2>&1
    tail -5 "$out/bench.txt"
    ;;
  refined)
    rows=gemm_M8192_K8192_N8192,gemm_M16384_K1024_N1024,gemm_M16384_K4096_N1024,gemm_M8192_K4096_N4096
    run ./build/benchmarks/tune_suite "$out/tune" --trials 16 --only "$rows" >"$out/tune.txt" 2>&1
    cat "$log" "$out/tune/tuning.jsonl" >"$out/merged.jsonl"
    run ./build/benchmarks/bench_suite "$out/bench.json" --repeats 50 --only "$rows" --log "$out/merged.jsonl" \
      >"$out/bench.txt" 2>&1
    tail -6 "$out/bench.txt"
    ;;
  epilogue)
    gpu_variants shared_pointers_
    k1024=(gemm_M16384_K1024_N1024 post_layernorm_M16384_K1024_N1024)
    run benchmarks/trace_rows.sh --set packed_rounding=true --no-gpu-test "$out/packed" "$log" "${k1024[@]}"
    run benchmarks/trace_rows.sh --set packed_rounding=true,shared_pointers=true --no-gpu-test "$out/shared" \
      "$log" "${k1024[@]}"
    ;;
  reduce)
    gpu_variants finish_reductions_ post_layernorm,post_rmsnorm,swish_rowmax
    norm_rows=(post_layernorm_M16384_K1024_N1024 post_layernorm_M16384_K4096_N1024)
    norm_rows+=(post_layernorm_M8192_K1024_N4096 post_rmsnorm_M8192_K4096_N4096)
    run benchmarks/trace_rows.sh --set finish_reductions=true --no-gpu-test "$out/traces" "$log" "${norm_rows[@]}"
    ;;
  rows)
    rows=post_layernorm_M16384_K1024_N1024,post_layernorm_M16384_K4096_N1024
    run ./build/benchmarks/tune_suite "$out/tune" --trials 12 --only "$rows" \
      --fix reduction=cta,carried=shared,bf16_stash=true >"$out/tune.txt" 2>&1
    # The log's records are the H200's: replayed as they are on any card (the search's are this card's).
    for from in log search; do
      from_log=(--log "$log" --allow-target-mismatch)
      [[ $from == log ]] || from_log=(--log "$out/tune/tuning.jsonl")
      run ./build/benchmarks/bench_suite "$out/bench-$from.json" --repeats 50 --only "$rows" "${from_log[@]}" \
        >"$out/bench-$from.txt" 2>&1
      echo "from $from:"
      tail -3 "$out/bench-$from.txt"
    done
    ;;
  finish_ab)
    post_ln=post_layernorm_M16384_K1024_N1024,post_layernorm_M16384_K4096_N1024
    post_ln+=,post_layernorm_M8192_K1024_N4096,post_layernorm_M8192_K4096_N4096
    run ./build/benchmarks/tune_suite "$out/tune" --trials 2 --only "$post_ln" --ab finish_reductions \
      --ab-log "$log" >"$out/tune.txt" 2>&1
    cat "$log" "$out/tune/tuning.jsonl" >"$out/merged.jsonl"
    run ./build/benchmarks/bench_suite "$out/bench.json" --repeats 50 --only "$post_ln" --log "$out/merged.jsonl" \
      >"$out/bench.txt" 2>&1
    tail -5 "$out/bench.txt"
    ;;
  cluster_slot)
    gpu_variants resident_vectors_
    run benchmarks/trace_rows.sh --no-gpu-test --cluster-set resident_vectors=true \
      --cluster-set resident_vectors=true,one_input_slot=true,stages=4 \
      "$out/traces" "$log" post_layernorm_M16384_K1024_N1024
    ;;
  starts)
    rows=post_rmsnorm_M8192_K4096_N4096,gemm_layernorm_relu_M8192_K4096_N4096
    run ./build/benchmarks/tune_suite "$out/fixed" --trials 24 --only "$rows" \
      --fix bf16_stash=true,wide_finish=true,multicast_b=true >"$out/fixed.txt" 2>&1
    run ./build/benchmarks/tune_suite "$out/open" --trials 24 --only "$rows" --start-log "$log" >"$out/open.txt" 2>&1
    grep -h "starts from" "$out/open.txt"
    bench_searches "$rows,gemm_M8192_K4096_N4096" fixed open
    ;;
  persistent)
    run timeout 60 python3 benchmarks/copy_probe.py >"$out/copy-probe.txt" 2>&1
    gpu_variants persistent_finish_ post_layernorm,gemm_softmax,gemm_softcap_softmax,gemm_gelu_layernorm
    rows=(post_layernorm_M16384_K1024_N1024 gemm_softmax_M4096_K1024_N8192 gemm_softcap_softmax_M4096_K1024_N8192)
    rows+=(post_layernorm_M8192_K1024_N4096 gemm_gelu_layernorm_M16384_K1024_N4096)
    run benchmarks/trace_rows.sh --set persistent_finish=true --no-gpu-test "$out/traces" "$log" "${rows[@]}"
    cat "$out/copy-probe.txt"
    ;;
  chunked)
    rows=gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192,post_rmsnorm_M8192_K4096_N4096
    rows+=,gemm_layernorm_relu_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096
    run ./build/benchmarks/tune_suite "$out/open" --trials 24 --only "$rows" --start-log "$log" >"$out/open.txt" 2>&1
    grep -h "starts from" "$out/open.txt"
    bench_searches "$rows" open
    grep -c '"store_chunks":true' "$out/open/tuning.jsonl" | sed 's/^/records with the chunks: /'
    ;;
  chunked_pair)
    rows=gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192,post_rmsnorm_M8192_K4096_N4096
    rows+=,gemm_layernorm_relu_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096
    run ./build/benchmarks/tune_suite "$out/ab" --trials 3 --only "$rows" --ab store_chunks --ab-log "$log" \
      >"$out/ab.txt" 2>&1
    bench_searches "$rows" ab
    ;;
  chunked_ab)
    rows=gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192,post_rmsnorm_M8192_K4096_N4096
    run ./build/benchmarks/tune_suite "$out/chunks" --trials 24 --only "$rows" >"$out/chunks.txt" 2>&1
    run ./build/benchmarks/tune_suite "$out/whole" --trials 24 --only "$rows" --fix store_chunks=false \
      >"$out/whole.txt" 2>&1
    for search in chunks whole; do echo "== $search"; grep ' best ' "$out/$search.txt"; done
    ;;
  model_scratch)
    old_tune_suite=$(old_tune_suite 79) || exit 2
    rows=post_layernorm_M8192_K4096_N4096,post_rmsnorm_M8192_K4096_N4096,gemm_layernorm_relu_M8192_K4096_N4096
    rows+=,gemm_softmax_M4096_K1024_N8192,gemm_softcap_softmax_M4096_K1024_N8192
    run "$old_tune_suite" "$out/old" --trials 24 --only "$rows" >"$out/old.txt" 2>&1
    run ./build/benchmarks/tune_suite "$out/new" --trials 24 --only "$rows" >"$out/new.txt" 2>&1
    for search in old new; do echo "== $search"; grep ' best ' "$out/$search.txt"; done
    ;;
  rounding)
    old_tune_suite=$(old_tune_suite 81) || exit 2
    log_where 'r["timestamp"] < "2026-12-07T23:16"' >"$out/before.jsonl"
    row=gemm_softmax_M4096_K1024_N8192
    for search in old new; do
      tune_suite=./build/benchmarks/tune_suite
      [[ $search == old ]] && tune_suite=$old_tune_suite
      run "$tune_suite" "$out/$search" --trials 24 --only $row --start-log "$out/before.jsonl" >"$out/$search.txt" 2>&1
    done
    rm "$out/before.jsonl"
    run ./build/benchmarks/tune_suite "$out/n32000" --trials 24 --only gemm_softmax_M4096_K4096_N32000 \
      --start-log "$log" >"$out/n32000.txt" 2>&1
    bench_searches gemm_softmax_M4096_K4096_N32000 n32000
    for search in old new n32000; do
      echo "== $search: $(grep -c '"store_chunks":true' "$out/$search/tuning.jsonl") records with the chunks"
      grep ' best ' "$out/$search.txt"
    done
    ;;
  cluster_shared)
    row=gemm_softmax_M4096_K1024_N8192
    run ./build/benchmarks/tune_suite "$out/search" --trials 12 --only $row --fix reduction=cluster,carried=shared \
      >"$out/search.txt" 2>&1
    bench_searches $row search
    grep ' best ' "$out/search.txt"
    ;;
  handoff)
    gpu_variants early_handoff_ gemm,gemm_bias_relu,post_layernorm,gemm_softmax,gemm_gelu_layernorm
    log_where 'r.get("schedule", {}).get("warp_roles") == "ping_pong"' >"$out/ping_pong.jsonl"
    rows=(post_layernorm_M16384_K1024_N1024 post_layernorm_M8192_K1024_N4096 gemm_gelu_layernorm_M16384_K1024_N4096)
    rows+=(gemm_softmax_M4096_K1024_N8192 gemm_softcap_softmax_M4096_K1024_N8192 post_layernorm_M8192_K4096_N4096)
    rows+=(gemm_M16384_K1024_N1024)
    run benchmarks/trace_rows.sh --set early_handoff=true --no-gpu-test "$out/traces" "$out/ping_pong.jsonl" \
      "${rows[@]}"
    rm "$out/ping_pong.jsonl"
    ;;
  owed)
    run "$self" forms "$root" "$log"
    run "$self" refined "$root" "$root/forms/merged.jsonl"
    cp "$root/refined/merged.jsonl" "$out/merged.jsonl"
    ;;
  *)
    echo "unknown step '$step': trace, runtime, keep, profile, chunks, inplace, slot, pairs, stash, forms," \
      "epilogue, refined, owed, reduce, rows, finish_ab, cluster_slot, starts, persistent, chunked, chunked_pair," \
      "chunked_ab, model_scratch, rounding, cluster_shared or handoff" >&2
    exit 2
    ;;
esac

tar -czf "$root/$step.tgz" -C "$root" "$step"
echo "step $step: exit $status, outputs in $root/$step.tgz"
exit $status
