#!/usr/bin/env bash
# Session 49, call 4: the FP8 kernel at head dim 64 on 3 consumer warpgroups (192-row items;
# carry s49c, built with GPUATTN_FP8_D64_CONSUMERS=3) against 2 (s49b) and against the dequantized
# path (s49b under GPUATTN_FP8_KERNEL=0): its FP8 suites and racecheck, then gpuattn_fp8_probe
# --head-dim 64 in balanced order (bench/ab_probe.py).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s49/call4.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
for v in s49b s49c; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry"; exit 1; }
done
T=/tmp/s49c/gpuattn_cuda_tests
timeout 100 $T --gtest_filter='Fp8*:-Fp8AttentionCuda.KernelMatchesTheReference' > $OUT/fp8-suite-3c.txt 2>&1
echo "fp8 suite (3 consumers) rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite-3c.txt | tr '\n' ' ')"
grep -B2 -A12 "Failure" $OUT/fp8-suite-3c.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 80 $SAN --tool racecheck --error-exitcode 9 $T --gtest_brief=1 \
  --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64' > $OUT/racecheck-3c.txt 2>&1
echo "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-3c.txt | tail -1)"
printf '#!/bin/sh\nGPUATTN_FP8_KERNEL=0 exec /tmp/s49b/gpuattn_fp8_probe "$@"\n' > /tmp/dequant.sh
chmod +x /tmp/dequant.sh
echo "== A: 2 consumers, B: 3 consumers"
timeout 150 python3 bench/ab_probe.py --rounds 3 /tmp/s49b/gpuattn_fp8_probe /tmp/s49c/gpuattn_fp8_probe -- 20 --head-dim 64 2>&1 | tee $OUT/ab-2c-3c.txt
echo "== A: dequantized q (GPUATTN_FP8_KERNEL=0), B: 3 consumers"
timeout 150 python3 bench/ab_probe.py --rounds 2 /tmp/dequant.sh /tmp/s49c/gpuattn_fp8_probe -- 20 --head-dim 64 2>&1 | tee $OUT/ab-deq-3c.txt
