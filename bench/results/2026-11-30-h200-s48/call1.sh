#!/usr/bin/env bash
# Session 48, call 1: the correctness half of scripts/gpu-check.sh at c6bf05e (s47 mends after
# its call 6: LaunchBuffer never null, kvcache out reuse, FP8 varlen test at 130 rows,
# prefill_lens; first whole GPU ctest since them).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s48/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=c6bf05e
GPU_CHECK_BENCH=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -40 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
