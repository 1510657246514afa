#!/usr/bin/env bash
# Session 69, call 4: the 8-bit decode kernel back to its 64-bit two-page offsets (the 32-bit form
# spilled its paged e4m3 instantiations, ptxas): the whole CUDA test binary (carry/s69.tar.xz) in
# 8 shards, memcheck of the 8-bit and paged leftpad suites.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s69/call4.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s69 /tmp/logs
tar xJf carry/s69.tar.xz -C /tmp/s69 --strip-components 1
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 /tmp/s69/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards done after $(( $(date +%s) - start )) s"
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
timeout 120 compute-sanitizer --tool memcheck /tmp/s69/gpuattn_cuda_tests \
  --gtest_filter='QuantizedKvCuda.*:PagedKvCuda.Leftpad*' > /tmp/logs/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -5
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
