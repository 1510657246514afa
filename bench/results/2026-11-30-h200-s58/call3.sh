#!/usr/bin/env bash
# Session 58, call 3: the first half of the correctness check (build, ctest on the 16 shards, the
# fuzz step) with the lean own dense/causal kernels (FwdTraits::kOwnDenseCausal) and the two-CTA
# kernel without varlen code (kTakesVarlen): calls 1-2 measured them.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s58/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s58-call3}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
