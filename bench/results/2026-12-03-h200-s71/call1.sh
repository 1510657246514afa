#!/usr/bin/env bash
# Session 71, call 1: the first GPU run of 2e4aaba (s70's last mend: host-side ALiBi view check,
# FwdParams::alibi_rows, the shared score_mod bench harness): the whole CUDA test binary in 8
# shards, memcheck of the ALiBi and 8-bit suites, and the known capture fragility reproduced (an
# in-place 8-bit decode test as its process's first test).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s71/call1.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s71 /tmp/logs
tar xJf carry/s71.tar.xz -C /tmp/s71 --strip-components 1
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 /tmp/s71/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards done after $(( $(date +%s) - start )) s"
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
timeout 150 compute-sanitizer --tool memcheck /tmp/s71/gpuattn_cuda_tests \
  --gtest_filter='*Alibi*:QuantizedKvCuda.*' > /tmp/logs/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -5
timeout 60 /tmp/s71/gpuattn_cuda_tests --gtest_filter='QuantizedKvCuda.DecodeReadsTheEightBitCacheInPlace' \
  > /tmp/logs/first-in-capture.log 2>&1
echo "in-place decode as the first test: rc $?"
grep -E 'not permitted|^\[  (PASSED|FAILED)' /tmp/logs/first-in-capture.log | head -4
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
