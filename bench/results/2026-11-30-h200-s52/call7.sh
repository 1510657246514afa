#!/usr/bin/env bash
# Session 52, call 7: the landing check of 3 consumer warpgroups at FP8 head dim 128
# (sm90_fp8_192x128 at D = 128 where three_consumers_pay, not varlen calls): the FP8 suite (the
# D128 and D64 cases on the rule's pick, then forced to 3 and to 2 consumers), memcheck and
# racecheck of the D128 test, and gpuattn_fp8_probe against main before the change.
# Expected: the rule's shapes as call 6 (dense 1.02-1.09x, causal S2048+ 1.02-1.07x), causal
# S512 / S1024 and varlen16 1.00x (kept on 2 consumers).
# carry/k4.tar.xz (built locally): k4/gpuattn_cuda_tests and k4/gpuattn_fp8_probe of the change,
# k4/probe_main of main 6625f35 (its kernels' code is the change's 2-consumer code).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call7.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/k4 && tar xJf carry/k4.tar.xz -C /tmp/k4 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/k4/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -40
echo "lines on sm90_fp8_192x128: $(grep -c sm90_fp8_192x128 $OUT/fp8-suite.txt)"
for tool in memcheck racecheck; do
  timeout 240 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
echo "== head dim 128, A: main, B: 3 consumers where the rule takes them"
timeout 150 python3 bench/ab_probe.py --rounds 3 /tmp/k4/probe_main /tmp/k4/gpuattn_fp8_probe \
  -- 20 --head-dim 128 2>&1 | tee $OUT/ab-d128.txt
