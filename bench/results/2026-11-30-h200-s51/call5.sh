#!/usr/bin/env bash
# Session 51, call 5: the FP8 kernel's TMA store of O for varlen calls too (a consumer
# warpgroup's 64 rows when all lie in their sequence; the last rows of a sequence from the
# registers, as before), with varlen padded-out test cases (lengths 128, 0, 65, 64) at head dims
# 64 and 128 and a register-path one at 256. Expected: varlen16 D128 causal ~+4-6% (the dense
# B4 S4096 causal shape gained 6% from the TMA store in call 1), dense shapes unchanged.
# carry ["carry/epi2.tar.xz"]: epi/gpuattn_cuda_tests and epi/gpuattn_fp8_probe of the change,
# epi/probe_main of main 9aecd36 (built here, stripped, tar cJf).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s51/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/epi && tar xJf carry/epi2.tar.xz -C /tmp/epi --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/epi/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
grep -E 'varlen.*padded|padded.*varlen|lens_padded' $OUT/fp8-suite.txt | head
for tool in memcheck racecheck; do
  timeout 170 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference:Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64' \
    > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
for d in 128 64; do
  echo "== head dim $d, A: main, B: varlen O by TMA store"
  timeout 100 python3 bench/ab_probe.py --rounds 3 /tmp/epi/probe_main /tmp/epi/gpuattn_fp8_probe \
    -- 20 --head-dim $d 2>&1 | tee $OUT/ab-d$d.txt
done
