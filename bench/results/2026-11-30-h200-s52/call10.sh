#!/usr/bin/env bash
# Session 52, call 10: FP8 head dim 128 on 3 consumers with 3 K/V stages and 2 V^T stages (against
# landed 2 K/V and 3 V^T; both fit: 230.5 KB against 214 KB of smem). Branch
# wip/fp8-d128-3c-stages; GPUATTN_FP8_KV3=1 picks it at run time in one binary (unset: main's).
# Expected: within +-3% (at head dim 64, 3 K/V stages gave causal S512-1024 +5%, long +1-2%; at
# 128 on 2 consumers 3 stages did nothing; s44's third V^T stage gave +3-4% on 2 consumers).
# carry/k6.tar.xz: k6/gpuattn_cuda_tests and k6/gpuattn_fp8_probe of the branch (built locally).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call10.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/k6 && tar xJf carry/k6.tar.xz -C /tmp/k6 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/k6/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
printf '#!/bin/sh\nexec /tmp/k6/gpuattn_fp8_probe "$@"\n' > /tmp/k6/a.sh
printf '#!/bin/sh\nGPUATTN_FP8_KV3=1 exec /tmp/k6/gpuattn_fp8_probe "$@"\n' > /tmp/k6/b.sh
chmod +x /tmp/k6/a.sh /tmp/k6/b.sh
echo "== head dim 128, A: 2 K/V + 3 V^T stages (main), B: 3 K/V + 2 V^T on 3 consumers"
timeout 100 python3 bench/ab_probe.py --rounds 3 /tmp/k6/a.sh /tmp/k6/b.sh -- 20 --head-dim 128 2>&1 | tee $OUT/ab-d128.txt
GPUATTN_FP8_KV3=1 timeout 60 $T --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference' > $OUT/fp8-d128.txt 2>&1
echo "fp8 D128 test (3 K/V stages) rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-d128.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-d128.txt | head -20
for tool in memcheck racecheck; do
  GPUATTN_FP8_KV3=1 timeout 80 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReference' > $OUT/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool rc-line: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[  FAILED' $OUT/$tool.txt) failed"
done
