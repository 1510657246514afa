#!/usr/bin/env bash
# Session 63, call 5: the CUDA test binary built here at the session's last code (KernelChoiceScope
# in every CUDA call, the exact overlap check, the JSON value bound) and carried
# (scripts/carry-build.sh s63b gpuattn_cli gpuattn_cuda_tests): all of it in 8 gtest shards at
# once, then verify --quick.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s63/call5.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s63b && tar xJf carry/s63b.tar.xz -C /tmp/s63b --strip-components 1
start=$(date +%s)
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 170 /tmp/s63b/gpuattn_cuda_tests \
    > $OUT/shard$i.log 2>&1 &
done
wait
echo "shards done after $(( $(date +%s) - start )) s"
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' $OUT/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' $OUT/shard*.log | sort -u | head
/tmp/s63b/gpuattn verify --device cuda --quick > $OUT/verify.txt 2>&1; echo "verify rc $?"; tail -1 $OUT/verify.txt
echo "done after $(( $(date +%s) - start )) s"
