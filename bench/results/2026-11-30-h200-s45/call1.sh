#!/usr/bin/env bash
# Session 45, call 1: s44's next-call.sh (FP8 suite with the four cases not yet run on main's
# kernel, sanitizers, probe twice, Python FP8 tests), then the new VarlenNeighbours cases (a
# query-less sequence of NaN K / V inside the previous sequence's last key tile) on the default
# dispatch and under GPUATTN_KERNEL=sm80. Build: rm -f carry/* && CARRY_BUILD_DIR=build-s38
# scripts/carry-build.sh s45a gpuattn_cuda_tests gpuattn_fp8_probe; run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call1.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s45a && tar xJf carry/s45a.tar.xz -C /tmp/s45a --strip-components 1
T=/tmp/s45a/gpuattn_cuda_tests
for k in auto sm80; do
  GPUATTN_KERNEL=$k timeout 120 $T --gtest_filter='*VarlenNeighbours*' > $OUT/neigh-$k.txt 2>&1
  echo "neighbours $k rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/neigh-$k.txt | tr '\n' ' ')"
  grep -E "FAILED  \]|rel err|nonfinite|NaN" $OUT/neigh-$k.txt | head -12
done
V=s45a bash bench/results/2026-11-30-h200-s44/next-call.sh
