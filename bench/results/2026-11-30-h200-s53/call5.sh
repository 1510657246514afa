#!/usr/bin/env bash
# Session 53, call 5 (branch wip/fp8-d256-two-q, one commit on 5326a61): FP8 head dim 256 with a
# second Q buffer, paid for by a V ring (V as loaded, before the transposer) of one stage instead of
# two (GPUATTN_FP8_D256_TWO_Q=1 picks it at run time for both head-dim-256 kernels, with and
# without the overlap; unset runs main's: one binary for both sides of the A/B).
# Expected: with one Q buffer the next item's Q load starts only after the last S GEMM of this one;
# a second buffer hides it, which should show at short items (S512-S1024, causal most): 2-5%; the
# one-stage V ring may cost long calls if the transposer waits on V loads (a tile's P V is ~2 us,
# a 32 KB load well under that: expect no change there).
# carry/twoq.tar.xz: twoq/gpuattn_cuda_tests and twoq/gpuattn_fp8_probe built at the branch
# (build-s38, sm_90a, stripped).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/twoq && tar xJf carry/twoq.tar.xz -C /tmp/twoq --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/twoq/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
printf '#!/bin/sh\nexec /tmp/twoq/gpuattn_fp8_probe "$@"\n' > /tmp/twoq/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_D256_TWO_Q=1 exec /tmp/twoq/gpuattn_fp8_probe "$@"\n' > /tmp/twoq/b.sh
chmod +x /tmp/twoq/a.sh /tmp/twoq/b.sh
GPUATTN_FP8_D256_TWO_Q=1 timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite (two Q) rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
for tool in memcheck racecheck; do
  GPUATTN_FP8_D256_TWO_Q=1 timeout 200 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim256' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
echo "== head dim 256, A: main (one Q buffer, 2 V stages), B: two Q buffers, 1 V stage"
timeout 150 python3 bench/ab_probe.py --rounds 3 /tmp/twoq/a.sh /tmp/twoq/b.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-d256.txt
