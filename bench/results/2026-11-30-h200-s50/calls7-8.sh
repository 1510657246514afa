#!/usr/bin/env bash
# Session 50, calls 7-8 (the device's last minutes, on the warm machine of call 6): the random FP8
# test of carry s50f from fresh seeds (5050: 32 cases; 5051: 150; 5052: 150, cut at 128 by its
# timeout, no failure to then, its log not kept).
#   (run with carry ["carry"])
T=/tmp/s50f/gpuattn_cuda_tests
mkdir -p /tmp/s50f && tar xJf carry/s50f.tar.xz -C /tmp/s50f --strip-components 1
GPUATTN_FUZZ_SEED=5050 timeout 55 $T --gtest_filter='Fp8*Random*' > $OUT/fp8-random.txt 2>&1
for s in 5051 5052; do
  GPUATTN_FUZZ_SEED=$s GPUATTN_FUZZ_CASES=150 timeout 24 $T --gtest_filter='Fp8*Random*' \
    > $OUT/fp8-random-$s.txt 2>&1
done
