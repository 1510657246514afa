#!/usr/bin/env bash
# Device call 2 (session 26): the second half of the correctness check at HEAD through gpu-check:
# pytest, the sanitizers (with the new sm90_2stage steps), verify.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_CTEST_ARGS="-R python.pytest" \
  timeout 585 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc=$? $(($(date +%s)-t0)) s"
grep -E "^== |tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/console.log | tail -25
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete
