#!/usr/bin/env bash
# Session 27, device call 3, at main: the correctness half's first call (ctest but python.pytest,
# then verify) after the test-side speedups (the fp64 reference 4.1x faster at fp16,
# HostTensor::randomize and poison table-driven), against session 26's 356 s of ctest and 90 s of
# verify at 9812759 with the same arguments; then the 25 slowest tests.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_CTEST_ARGS="-E python.pytest" \
  scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc=$?"
grep -E "^\[|step|passed|failed|real" $OUT/console.log | tail -25
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null; f=$(ls $OUT/ctest.log /tmp/ctest.log 2>/dev/null | head -1)
[ -n "$f" ] && awk '{for(i=1;i<=NF;i++) if($i=="sec") print $(i-1), $4}' "$f" | sort -rn | head -25
