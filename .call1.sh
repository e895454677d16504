#!/usr/bin/env bash
# Shared-memory stash: GPU correctness, tuning of the five rows it fits, bench old vs new, profile of post-LN N1024.
cd "$(dirname "$0")"
export COMFUSE_REQUIRE_GPU=1
R=post_layernorm_M8192_K1024_N4096,post_layernorm_M8192_K4096_N4096,post_rmsnorm_M8192_K4096_N4096,gemm_gelu_layernorm_M16384_K1024_N4096,gemm_layernorm_relu_M8192_K4096_N4096
mkdir -p $OUT/r
./build/benchmarks/tune_suite $OUT/r/tune --only $R > $OUT/r/tune.log 2>&1; echo "tune rc=$?"
./build/benchmarks/bench_suite $OUT/r/bench_old.json --log tuning_logs/h200.jsonl --only $R > $OUT/r/bench_old.txt 2>&1
./build/benchmarks/bench_suite $OUT/r/bench_new.json --log $OUT/r/tune/h200.jsonl --only $R > $OUT/r/bench_new.txt 2>&1
timeout 200 bash benchmarks/profile_row.sh $OUT/r/prof tuning_logs/h200.jsonl post_layernorm_M16384_K1024_N1024 comfuse_mm > $OUT/r/prof.txt 2>&1; echo "prof rc=$?"
rm -f $OUT/r/prof/*.ncu-rep
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r/prof
cat $OUT/r/tune/suite.txt 2>/dev/null || tail -20 $OUT/r/tune.log
echo == old; tail -8 $OUT/r/bench_old.txt; echo == new; tail -8 $OUT/r/bench_new.txt
head -40 $OUT/r/prof.txt
