#!/usr/bin/env bash
# Session 47, call 3: call 2's ctest had "stack smashing detected" in shard 9 of both the cuda. and
# sm80. copies (16 shards), and sm80.shard13's DecodeReadsReadyKeysBeforeTheWaitAndTheNewestAfter
# found no overlap. Shard 9 again, test by test (carried binary of 731ba99), then each test of it
# alone; the decode overlap test alone under GPUATTN_KERNEL=sm80, 3 times.
#   run with carry ["carry"]:  OUT=$OUT bash bench/results/2026-11-30-h200-s47/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/t47 && tar xJf carry/t47.tar.xz -C /tmp/t47 --strip-components 1 || exit 1
T=/tmp/t47/gpuattn_cuda_tests
for env in "" "GPUATTN_KERNEL=sm80"; do
  env $env GTEST_TOTAL_SHARDS=16 GTEST_SHARD_INDEX=9 timeout 150 $T --gtest_also_run_disabled_tests \
    > $OUT/shard9-${env:-auto}.txt 2>&1
  echo "shard9 ${env:-auto} rc $?"; grep -E '^\[ RUN|^\[  FAILED|smash' $OUT/shard9-${env:-auto}.txt | tail -4
done
for i in 1 2 3; do
  GPUATTN_KERNEL=sm80 timeout 60 $T --gtest_filter='*DecodeReadsReadyKeysBeforeTheWait*' > /tmp/ov.txt 2>&1
  echo "overlap sm80 run $i rc $?"; grep -E 'Failure|overlapped' /tmp/ov.txt | head -3
done
timeout 60 $T --gtest_filter='*DecodeReadsReadyKeysBeforeTheWait*' > /tmp/ov.txt 2>&1; echo "overlap auto rc $?"
