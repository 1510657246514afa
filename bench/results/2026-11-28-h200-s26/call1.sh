#!/usr/bin/env bash
# Device call 1 (session 26): the first half of the correctness check at HEAD through gpu-check:
# build, ctest but python.pytest, verify (no sanitizers, no timing).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_CTEST_ARGS="-E python.pytest" \
  timeout 585 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc=$? $(($(date +%s)-t0)) s"
grep -E "^== |tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/console.log | tail -25
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete
