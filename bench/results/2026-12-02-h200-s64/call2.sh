#!/usr/bin/env bash
# Session 64, call 2: the CUDA test binary built here (scripts/carry-build.sh s64a, at 062cf11 +
# the RotaryCuda tests) and carried: gpuattn::apply_rotary's kernel against the CPU backend, and
# WorkSchedule's heavy row blocks for Sq != Sk (the sm_90a kernels' item order) under every GPU
# attention test; all of it in 8 gtest shards at once, then verify --quick.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s64/call2.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s64a && tar xJf carry/s64a.tar.xz -C /tmp/s64a --strip-components 1
start=$(date +%s)
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 /tmp/s64a/gpuattn_cuda_tests \
    > $OUT/shard$i.log 2>&1 &
done
wait
echo "shards done after $(( $(date +%s) - start )) s"
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' $OUT/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' $OUT/shard*.log | sort -u | head
grep -h 'RotaryCuda.*\(OK\|FAILED\)' $OUT/shard*.log | head
/tmp/s64a/gpuattn verify --device cuda --quick > $OUT/verify.txt 2>&1; echo "verify rc $?"; tail -1 $OUT/verify.txt
echo "done after $(( $(date +%s) - start )) s"
