#!/usr/bin/env bash
# Session 27, device call 6 (fresh machine): ctest but python.pytest with the GPU suite's four
# variants as 16 gtest shards each (GPUATTN_GPU_TEST_SHARDS=16, gpu-check's new default), against
# call 3's 303 s with a process per case; no sanitizers, no verify (call 3 ran verify at the same
# library code).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 GPU_CHECK_CTEST_ARGS="-E python.pytest" \
  scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc=$?"
grep -E "^== |tests passed|Total Test|FAILED|Failed" $OUT/console.log | tail -20
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null; f=$(ls $OUT/ctest.log /tmp/ctest.log 2>/dev/null | head -1)
[ -n "$f" ] && awk '{for(i=1;i<=NF;i++) if($i=="sec") print $(i-1), $4}' "$f" | sort -rn | head -12
