#!/usr/bin/env bash
# Session 52, call 1 (run as prepared in s51; branch wip/fp8-transpose-addresses, one kernel commit on main
# 31868f0, rebased; carry built at 6e13d58: the same PTX): the FP8 kernel's V transposer with each step's constant address parts as immediates
# (three warp-templated unrolled step lists; the lane's parts split out and checked against the
# first-written addresses by a static_assert at every step and lane of each head dim). SASS
# (local cuobjdump): a step 25 -> ~8.4 instructions; per 128-key tile the three warps issue ~270
# instead of ~800 at D128 (~10% of the 5,089 a tile ncu counted in s51 call 6), ~460 instead of
# ~1,600 at D256, ~140 instead of ~400 at D64. No spills.
# Expected: long calls a few % faster where issue slots are shared with the consumers (s44's V^T
# pre-pass, which took the transposes out of the kernel, measured +2.5-4.5% at S8192-16384); short
# calls unchanged.
# carry/tr.tar.xz (built in s51): tr/gpuattn_cuda_tests and tr/gpuattn_fp8_probe of the branch,
# tr/probe_main of main 6e13d58 (its kernels' PTX is main 31868f0's). If it is gone:
#   git checkout wip/fp8-transpose-addresses && ninja -C build-s38 gpuattn_cuda_tests gpuattn_fp8_probe &&
#   mkdir -p /tmp/tr/tr && strip -o /tmp/tr/tr/gpuattn_cuda_tests build-s38/tests/gpuattn_cuda_tests &&
#   strip -o /tmp/tr/tr/gpuattn_fp8_probe build-s38/tools/gpuattn_fp8_probe &&
#   git checkout main && ninja -C build-s38 gpuattn_fp8_probe &&
#   strip -o /tmp/tr/tr/probe_main build-s38/tools/gpuattn_fp8_probe && tar cJf carry/tr.tar.xz -C /tmp/tr tr
# Run from a checkout of the branch with carry ["carry/tr.tar.xz"] (~4 min):
#   OUT=$OUT bash bench/results/2026-11-30-h200-s51/next-call-fp8-transpose.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/tr && tar xJf carry/tr.tar.xz -C /tmp/tr --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/tr/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
for tool in memcheck racecheck; do
  timeout 170 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference*' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
for d in 128 256 64; do
  echo "== head dim $d, A: main, B: the transposer's addresses as immediates"
  timeout 110 python3 bench/ab_probe.py --rounds 3 /tmp/tr/probe_main /tmp/tr/gpuattn_fp8_probe \
    -- 20 --head-dim $d 2>&1 | tee $OUT/ab-d$d.txt
done
