#!/usr/bin/env bash
# Session 47, call 2: the correctness half of scripts/gpu-check.sh at 731ba99 (varlen calls with no
# packed k/v or q rows on the sm_90a kernels; new tests VarlenWithoutKeyOrQueryRows, 16-bit at
# every head dim and FP8, run under every GPUATTN_KERNEL copy of the GPU ctest).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s47/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=731ba99
GPU_CHECK_BENCH=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -40 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
