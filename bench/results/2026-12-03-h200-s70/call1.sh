#!/usr/bin/env bash
# Session 70, call 1: the first GPU run of b62b88f (s69's last mend: one fast-tanh bound,
# FwdParams::exact_tanh; HostBlockTable batch of one): the whole CUDA test binary in 8 shards,
# memcheck of the 8-bit and paged leftpad suites, and every kernel's registers and spills (cuobjdump).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s70/call1.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s70 /tmp/logs
tar xJf carry/s70.tar.xz -C /tmp/s70 --strip-components 1
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 /tmp/s70/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards done after $(( $(date +%s) - start )) s"
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
timeout 120 compute-sanitizer --tool memcheck /tmp/s70/gpuattn_cuda_tests \
  --gtest_filter='QuantizedKvCuda.*:PagedKvCuda.Leftpad*' > /tmp/logs/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -5
cuobjdump -res-usage /tmp/s70/gpuattn_cuda_tests > /tmp/logs/res-usage.txt 2>&1
echo "res-usage: $(grep -c 'Function' /tmp/logs/res-usage.txt) kernels, $(grep -cE 'STACK:[1-9]|LOCAL:[1-9]' /tmp/logs/res-usage.txt) with stack or local memory"
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
