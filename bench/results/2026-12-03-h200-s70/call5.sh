#!/usr/bin/env bash
# Session 70, call 5 (the device budget's last ~5 minutes): the review's fixes. An ALiBi call over
# an 8-bit cache is picked (cuda_forward_kernel) and counted (attention_counters_needed) as its
# dequantized copy's call (the 16-bit decode kernel at decode shapes; before, 1 counter, too few);
# the float16-copy refusal names the ALiBi route; a softmax_scale below ~2.9e-39 with ALiBi is
# refused. The CUDA test binary built on the CPU machine (carry/s70b.tar.xz): every ALiBi and
# 8-bit-cache test, in 4 shards.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s70/call5.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s70b /tmp/logs
tar xJf carry/s70b.tar.xz -C /tmp/s70b --strip-components 1
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 200 /tmp/s70b/gpuattn_cuda_tests \
    --gtest_filter='*Alibi*:QuantizedKvCuda.*' > /tmp/logs/shard$i.log 2>&1 &
done
wait
for i in 0 1 2 3; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
