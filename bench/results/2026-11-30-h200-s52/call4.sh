#!/usr/bin/env bash
# Session 52, call 4: 256-key tiles for the FP8 kernel at head dim 128 (branch wip/fp8-256-keys;
# GPUATTN_FP8_D128_KEYS=256 picks them at run time in this branch's build, unset runs main's
# 128-key kernel: one binary for both sides of the A/B). 256 keys: S in two m64n128 accumulators
# (128 registers), P V over V^T in two 128-key slabs, no intra-warpgroup overlap (it spilled 224
# bytes), 2 V^T stages, O from the registers (no room for the O buffers): 224 KB of smem.
# SASS (local): the consumer tile loop ~925 instructions a 256-key tile against ~539 a 128-key one
# (masking excluded): ~14% fewer consumer instructions a key, ~13% of the CTA's.
# Expected: long calls 5-10% faster if the lost overlap costs less than that; short calls slower.
# carry/k2.tar.xz: k2/gpuattn_cuda_tests and k2/gpuattn_fp8_probe of the branch (built locally).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/k2 && tar xJf carry/k2.tar.xz -C /tmp/k2 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/k2/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
printf '#!/bin/sh\nexec /tmp/k2/gpuattn_fp8_probe "$@"\n' > /tmp/k2/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_D128_KEYS=256 exec /tmp/k2/gpuattn_fp8_probe "$@"\n' > /tmp/k2/b.sh
chmod +x /tmp/k2/a.sh /tmp/k2/b.sh
GPUATTN_FP8_D128_KEYS=256 timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite-256.txt 2>&1
echo "fp8 suite (256 keys) rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite-256.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite-256.txt | head -40
for tool in memcheck racecheck; do
  GPUATTN_FP8_D128_KEYS=256 timeout 170 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
echo "== head dim 128, A: 128-key tiles (main's kernel), B: 256-key tiles"
timeout 150 python3 bench/ab_probe.py --rounds 3 /tmp/k2/a.sh /tmp/k2/b.sh -- 20 --head-dim 128 2>&1 | tee $OUT/ab-d128.txt
