#!/usr/bin/env bash
# Twelfth session, fourth call (an H100 came where an H200 was asked for): the rest of Change 56's GPU-test
# variants, the soft-capped softmax's, cut short by the third call's limit.
set -uo pipefail
O=$1; P=$O/p; mkdir -p $P
# Builds nothing: the binaries under build/ are a Release build of the tree as committed with this folder.
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $P/device.txt; date -u >> $P/device.txt
cat $P/device.txt
pack() { tar -czf $O/all.tgz -C $O p 2>/dev/null; }
COMFUSE_REQUIRE_GPU=1 COMFUSE_GPU_CASES=gemm_softcap_softmax/terms_tma_store_ timeout 330 ./build/tests/codegen/gpu/codegen_gpu_tests --gtest_filter='Workloads/FusedKernelGpuTest.*' > $P/gpu-tests-softcap-terms_tma_store.log 2>&1
echo "gpu tests exit $? ok $(grep -c '^ok ' $P/gpu-tests-softcap-terms_tma_store.log) fail $(grep -c '^FAIL \|Failure$' $P/gpu-tests-softcap-terms_tma_store.log)" | tee -a $P/summary.txt
pack
