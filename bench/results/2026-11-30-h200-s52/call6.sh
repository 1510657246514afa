#!/usr/bin/env bash
# Session 52, call 6: 3 consumer warpgroups (192-row items) for the FP8 kernel at head dim 128
# (branch wip/fp8-d128-3c; GPUATTN_FP8_D128_3C=1 picks them at run time in this branch's build,
# unset runs main's 2-consumer kernel: one binary for both sides of the A/B). Without the
# intra-warpgroup overlap (setmaxnreg 32 / 160: S 64 + P 16 + O 64 do not fit with it); smem
# 2 x 24 KB Q, 3 x 16 KB O buffers, 2 + 2 K / V and 3 V^T stages of 16 KB: 208 KB. SASS (local):
# the consumer tile loop as the 2-consumer one's; the producer's transposer 2 spill loads a tile.
# Expected: s51's ncu had both kernels at ~55% issue; a third warpgroup hides more latency (at
# head dim 64 three gave 1.12-1.29x), against the lost overlap (256-key tiles without it lost
# 2-24% in call 4, though with longer tiles). Long calls +-5%; short causal calls lose (192-row
# items: fewer CTAs a wave).
# carry/k3.tar.xz: k3/gpuattn_cuda_tests and k3/gpuattn_fp8_probe of the branch (built locally).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/k3 && tar xJf carry/k3.tar.xz -C /tmp/k3 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/k3/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
printf '#!/bin/sh\nexec /tmp/k3/gpuattn_fp8_probe "$@"\n' > /tmp/k3/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_D128_3C=1 exec /tmp/k3/gpuattn_fp8_probe "$@"\n' > /tmp/k3/b.sh
chmod +x /tmp/k3/a.sh /tmp/k3/b.sh
GPUATTN_FP8_D128_3C=1 timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite-3c.txt 2>&1
echo "fp8 suite (3 consumers) rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite-3c.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite-3c.txt | head -40
for tool in memcheck racecheck; do
  GPUATTN_FP8_D128_3C=1 timeout 170 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
echo "== head dim 128, A: 2 consumer warpgroups (main's kernel), B: 3"
timeout 150 python3 bench/ab_probe.py --rounds 3 /tmp/k3/a.sh /tmp/k3/b.sh -- 20 --head-dim 128 2>&1 | tee $OUT/ab-d128.txt
