#!/usr/bin/env bash
# Session 47, call 6: after the mends. The FP8 test's packed K/V buffer is rank 4 (its rank-5 view
# wrote past TensorView's 4-entry arrays: call 5's AddressSanitizer report), and HostTensor::view
# refuses a rank over 4. Device-built binary (stack protector): the FP8 suite, the empty-side varlen
# tests under the default dispatch and sm80, the decode overlap test (sm80: skipped).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s47/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/cfg.log 2>&1 && cmake --build build-gpu --target gpuattn_cuda_tests -j16 > /tmp/b.log 2>&1 \
  || { tail -20 /tmp/cfg.log /tmp/b.log; exit 1; }
ts built
T=build-gpu/tests/gpuattn_cuda_tests
timeout 100 $T --gtest_filter='Fp8AttentionCuda.*' --gtest_brief=1 > $OUT/fp8.txt 2>&1
ts "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
for env in "" "GPUATTN_KERNEL=sm80"; do
  env $env timeout 60 $T --gtest_filter='*VarlenWithoutKeyOrQueryRows*:*DecodeReadsReadyKeysBeforeTheWait*' > /tmp/e.txt 2>&1
  ts "${env:-auto} rc $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' /tmp/e.txt | tr '\n' ' ')"
done
