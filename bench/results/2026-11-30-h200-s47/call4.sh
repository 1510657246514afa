#!/usr/bin/env bash
# Session 47, call 4: the "stack smashing detected" of call 2's shard 9 did not come back in call 3
# with a binary built on the CPU machine (Debian's gcc: no stack protector by default); the device's
# gcc 13.3 (Ubuntu) protects stacks. So: gpuattn_cuda_tests built here (build-gpu, as gpu-check
# builds it), shard 9 whole, then each of its tests alone; and the decode overlap test under
# GPUATTN_KERNEL=sm80 (now skipped: its first call is not on the decode kernel).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s47/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/cfg.log 2>&1 && cmake --build build-gpu --target gpuattn_cuda_tests -j16 > /tmp/b.log 2>&1 \
  || { tail -20 /tmp/cfg.log /tmp/b.log; exit 1; }
ts built
T=build-gpu/tests/gpuattn_cuda_tests
GTEST_TOTAL_SHARDS=16 GTEST_SHARD_INDEX=9 timeout 150 $T --gtest_brief=1 --gtest_also_run_disabled_tests > $OUT/shard9.txt 2>&1
ts "shard9 rc $?"; tail -3 $OUT/shard9.txt
for t in $(GTEST_TOTAL_SHARDS=16 GTEST_SHARD_INDEX=9 timeout 100 env CUDA_VISIBLE_DEVICES= $T 2>&1 | grep '^\[ RUN' | awk '{print $4}'); do
  timeout 100 $T --gtest_filter="$t" --gtest_brief=1 > /tmp/one.txt 2>&1; rc=$?
  [ $rc -ne 0 ] && { echo "rc $rc $t"; tail -5 /tmp/one.txt; cp /tmp/one.txt "$OUT/fail-$(echo $t | tr -c 'A-Za-z0-9\n' _ | cut -c1-60).txt"; }
done
ts "singles done"
GPUATTN_KERNEL=sm80 timeout 60 $T --gtest_filter='*DecodeReadsReadyKeysBeforeTheWait*' > /tmp/ov.txt 2>&1
ts "overlap sm80 rc $?"; grep -E 'SKIPPED|Failure|OK' /tmp/ov.txt | head -3
