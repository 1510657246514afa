#!/usr/bin/env bash
# Session 48, call 2: the new random-case tests (AttentionCudaTest.RandomCasesMatchReference,
# BlockSparseCudaTest.RandomCasesMatchReference) on the GPU. Binary built on the CPU machine for
# sm_90a and carried (carry/fz.tar.xz). First the default seed under the default dispatch, sm80 and
# the 3-consumer kernel, then exploration: fresh seeds of 150 / 60 cases each, default dispatch and
# sm80 in turn, until ~330 s have passed. Each run's failures are kept whole.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s48/call2.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/fz && tar xJf carry/fz.tar.xz -C /tmp/fz --strip-components 1
T=/tmp/fz/gpuattn_cuda_tests
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F='*RandomCasesMatchReference*'
summ() { grep -E '^\[  (PASSED|FAILED) |random case [0-9]+ \(replay' "$1" | sort -u | head -12 | tr '\n' ' '; }
for env in "" "GPUATTN_KERNEL=sm80" "GPUATTN_KERNEL=sm90_ws_192x128"; do
  e=${env#GPUATTN_KERNEL=}; f=$OUT/default-${e:-auto}.txt
  env $env timeout 150 $T --gtest_filter="$F" > $f 2>&1
  ts "default seed ${env:-auto} rc $? $(summ $f)"
done
s=1
while [ $(($(date +%s)-t0)) -lt 330 ]; do
  for env in "" "GPUATTN_KERNEL=sm80"; do
    e=${env#GPUATTN_KERNEL=}; e=${e:-auto}; f=/tmp/seed$s-$e.txt
    GPUATTN_FUZZ_SEED=$s GPUATTN_FUZZ_CASES=150 env $env timeout 120 $T \
      --gtest_filter='AttentionCudaTest.RandomCasesMatchReference' > $f 2>&1
    rc=$?
    GPUATTN_FUZZ_SEED=$s GPUATTN_FUZZ_CASES=60 env $env timeout 120 $T \
      --gtest_filter='BlockSparseCudaTest.RandomCasesMatchReference' >> $f 2>&1
    rc2=$?
    ts "seed $s ${env:-auto} rc $rc/$rc2 $(summ $f)"
    if [ $rc != 0 ] || [ $rc2 != 0 ]; then
      n=$(ls $OUT | wc -l); [ $n -lt 7 ] && grep -v '^\[ checked' $f | head -300 > $OUT/fail-seed$s-$e.txt
    fi
  done
  s=$((s+1))
done
ts done
