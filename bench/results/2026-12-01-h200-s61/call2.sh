#!/usr/bin/env bash
# Session 61, call 2: the GPU suites again after the Python bindings' argument conversion and
# locks, the engine's and dist layer's checks and gpuattn bench's single input set (build, ctest
# on the 16 shards with python.pytest on CUDA, fuzz); then gpuattn bench --shapes default with one
# input set (the timer's L2 flush alone), to set beside session 60's table (15 sets at one-wave).
#   OUT=$OUT bash bench/results/2026-12-01-h200-s61/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s61-call2}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log $OUT/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log $OUT/fuzz.log 2>/dev/null | tail -3
build-gpu/tools/gpuattn bench --device cuda --shapes default --json $OUT/bench-default.json \
  > $OUT/bench-default.txt 2>&1
echo "bench rc $?"
cat $OUT/bench-default.txt | tail -25
