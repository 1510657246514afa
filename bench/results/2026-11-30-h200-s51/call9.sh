#!/usr/bin/env bash
# Session 51, call 9: O's rescale skipped at head dim 256 only when no row max of the warp grew
# (call 7's change restricted to D256; the D64 / D128 instantiations' PTX is main's, names aside):
# the FP8 suite, memcheck of the D256 kernel test, and the D256 A/B against main again.
# carry ["carry/e9.tar.xz"]: e9/gpuattn_cuda_tests, e9/gpuattn_fp8_probe of the change,
# e9/probe_main of main.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s51/call9.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/e9 && tar xJf carry/e9.tar.xz -C /tmp/e9 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/e9/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
echo "== head dim 256, A: main, B: O's rescale skipped at D256 when no row max of the warp grew"
timeout 100 python3 bench/ab_probe.py --rounds 3 /tmp/e9/probe_main /tmp/e9/gpuattn_fp8_probe \
  -- 20 --head-dim 256 2>&1 | tee $OUT/ab-d256.txt
for tool in memcheck racecheck; do
  timeout 100 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim256' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
