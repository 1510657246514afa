#!/usr/bin/env bash
# Session 53, call 3 (prepared in s52 as next-call-fp8-d256-overlap.sh; run from a checkout of
# branch wip/fp8-d256-overlap, 3847303): FP8 head dim 256 with the intra-warpgroup overlap, at setmaxnreg 24 / 240 (GPUATTN_FP8_D256_OVERLAP=1 picks it
# at run time in the branch's build; unset runs main's kernel: one binary for both sides of the
# A/B). At 232 ptxas serializes the wgmmas (C7512, as in s49); at 240 the consumers neither spill
# nor serialize, and the producer's transposer spills 72 bytes at 24 registers (~27 LDL / STL of
# its ~680 instructions a tile, local SASS).
# Expected: D256 is where we trail cuDNN FP8 most (0.84-0.95x, s52 call 5), on 2 consumers without
# the overlap; at D128 the overlap against none (s52 call 4's 256-key tiles lost it with 2-24%)
# suggests a few % to 10% at D256 if the producer's spills cost little.
# carry/d256.tar.xz (built in s52 at the branch): d256/gpuattn_cuda_tests and
# d256/gpuattn_fp8_probe. If it is gone: git checkout wip/fp8-d256-overlap &&
#   ninja -C build-s38 gpuattn_cuda_tests gpuattn_fp8_probe && mkdir -p /tmp/d256/d256 &&
#   strip -o /tmp/d256/d256/gpuattn_cuda_tests build-s38/tests/gpuattn_cuda_tests &&
#   strip -o /tmp/d256/d256/gpuattn_fp8_probe build-s38/tools/gpuattn_fp8_probe &&
#   tar cJf carry/d256.tar.xz -C /tmp/d256 d256
# Run from a checkout of the branch with carry ["carry/d256.tar.xz"] (~2 min):
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/next-call-fp8-d256-overlap.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/d256 && tar xJf carry/d256.tar.xz -C /tmp/d256 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/d256/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
printf '#!/bin/sh\nexec /tmp/d256/gpuattn_fp8_probe "$@"\n' > /tmp/d256/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_D256_OVERLAP=1 exec /tmp/d256/gpuattn_fp8_probe "$@"\n' > /tmp/d256/b.sh
chmod +x /tmp/d256/a.sh /tmp/d256/b.sh
GPUATTN_FP8_D256_OVERLAP=1 timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite (D256 overlap) rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
for tool in memcheck racecheck; do
  GPUATTN_FP8_D256_OVERLAP=1 timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim256' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
echo "== head dim 256, A: main (no overlap, 40 / 232), B: the overlap at 24 / 240"
timeout 150 python3 bench/ab_probe.py --rounds 3 /tmp/d256/a.sh /tmp/d256/b.sh -- 20 --head-dim 256 2>&1 | tee $OUT/ab-d256.txt
