#!/usr/bin/env bash
# The call as run (twenty-seventh session, 2026-12-07, 21:53 UTC, one H100; an H200 was asked for seven times
# before it and none started). Builds nothing: NEW is tune_suite from a Release build of this session's tree
# at 05cfd75 (Change 79's model), OLD tune_suite from the same build with src/search/cost_model.cc as at
# e46f03a (the model before it), packed by benchmarks/pack_binaries.sh and unpacked outside build/.
set -uo pipefail
OLD_TUNE_SUITE=${OLD_TUNE_SUITE:?tune_suite with the cost model of e46f03a} \
  timeout 560 benchmarks/device_plan.sh model_scratch "$1"
