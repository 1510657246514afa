#!/usr/bin/env bash
# Session 51, call 1 (prepared in s50; branch wip/fp8-tma-epilogue, 3 kernel commits on main bb1ee22):
#   cfe7f7c: the FP8 kernel's O of dense calls at head dims 64 and 128 by TMA store from an O
#            buffer of each consumer warpgroup (the 16-bit kernel's epilogue; FP8 stored O from
#            the registers, 4 bytes a thread a store);
#   75c1a0e: the epilogue's 1 / l and log2(l) on MUFU (rcp.approx, lg2.approx), as the 16-bit
#            kernel's (it measured 0.964x the time at D64 up to 2048 rows).
#   113b7ac: P = exp2(score - max + 8) in (0, 256] (FA3's shift): terms under 1/64 of the row max
#            leave E4M3's subnormals; the LSE takes the 8 off. A numpy emulation of the rounding
#            (s50, single pass, D128): test-like flat rows (logits ~N(0, 1)) no change; peaked
#            rows (logits x3) call error 0.86x at 1000 keys, 0.77x at 4096. Compare the suite's
#            "worst row / call" lines with main's (call6-fp8-d64.txt, s49's logs).
# Expected: short items (causal S512 / S1024: 1-8 tiles an item) a few % faster, long ones
# unchanged. s43 measured an smem epilogue with 16-byte thread stores at +3-4% short, -7% long
# (a different kernel: V^T written before it).
# carry/epi.tar.xz (built in s50, if still there; else rebuild): epi/gpuattn_cuda_tests and
# epi/gpuattn_fp8_probe of 113b7ac, epi/probe_main of main bb1ee22 (its fwd_sm90_fp8.cu: 417d9ef, 3 K/V stages at D64):
#   git checkout wip/fp8-tma-epilogue && ninja -C build-s38 gpuattn_cuda_tests gpuattn_fp8_probe &&
#   mkdir -p /tmp/epi/epi && strip -o /tmp/epi/epi/gpuattn_cuda_tests build-s38/tests/gpuattn_cuda_tests &&
#   strip -o /tmp/epi/epi/gpuattn_fp8_probe build-s38/tools/gpuattn_fp8_probe &&
#   git checkout main && ninja -C build-s38 gpuattn_fp8_probe &&
#   strip -o /tmp/epi/epi/probe_main build-s38/tools/gpuattn_fp8_probe &&
#   rm -f carry/* && tar cJf carry/epi.tar.xz -C /tmp/epi epi      (17 MB: the carry limit is 64 MiB)
# then run (carry ["carry/epi.tar.xz"], not all of carry/: the frontend wheel there too would pass
# the 64 MiB limit; ~5 min):
#   OUT=$OUT bash bench/results/2026-11-30-h200-s50/next-call-fp8-tma-epilogue.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/epi && tar xJf carry/epi.tar.xz -C /tmp/epi --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/epi/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -B2 -A12 "Failure" $OUT/fp8-suite.txt | head -30
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference:Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64' \
    > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
for d in 64 128; do
  echo "== head dim $d, A: main, B: the TMA epilogue + MUFU + P shift"
  timeout 120 python3 bench/ab_probe.py --rounds 3 /tmp/epi/probe_main /tmp/epi/gpuattn_fp8_probe \
    -- 20 --head-dim $d 2>&1 | tee $OUT/ab-d$d.txt
done
