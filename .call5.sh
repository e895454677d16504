#!/usr/bin/env bash
cd "$(dirname "$0")"
mkdir -p $OUT/p
for row in post_layernorm_M8192_K1024_N4096 gemm_softmax_M4096_K1024_N8192; do
  timeout 150 bash benchmarks/profile_row.sh $OUT/p tuning_logs/h200.jsonl $row comfuse_mm > $OUT/p/$row.out 2>&1; echo "$row rc=$?"
done
rm -f $OUT/p/*.ncu-rep $OUT/p/*.sass.csv $OUT/p/*.bench.json $OUT/p/*.run.txt
cat $OUT/p/*.out
