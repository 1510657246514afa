#!/usr/bin/env bash
# Session 62, call 1: the GPU suites at s61's last code (4e5d3fc and 201cb0a never ran on a GPU:
# build, ctest on the 16 shards with python.pytest, fuzz); then the one-wave call under four timer
# protocols (bench/timer_protocols.py: do_bench, torch-fill flush, driver-memset flush, no flush)
# for ours and cuDNN, and gpuattn bench on the same two shapes, to find what puts gpuattn bench's
# one-wave time 5% above compare_torch's.
#   OUT=$OUT bash bench/results/2026-12-01-h200-s62/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s62-call1}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log $OUT/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log $OUT/fuzz.log 2>/dev/null | tail -3
PYTHONPATH=build-gpu/python:bench timeout 150 python3 bench/timer_protocols.py \
  --json $OUT/timer_protocols.json > $OUT/timer_protocols.txt 2>&1
echo "timer_protocols rc $?"
cat $OUT/timer_protocols.txt | tail -12
for i in 1 2; do
  build-gpu/tools/gpuattn bench --device cuda --shape "B1 H16 S1024 D64; B4 H16 S4096 D128" \
    > $OUT/bench-$i.txt 2>&1
  echo "bench $i rc $?"; tail -4 $OUT/bench-$i.txt
done
