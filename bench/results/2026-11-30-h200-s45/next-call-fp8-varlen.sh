#!/usr/bin/env bash
# Branch wip/fp8-varlen, for the next session's first device call (~3 min). The kernel as
# committed at the branch's head has not run on a GPU: since s45 call 8 (0.96-1.00x of main's
# dense speed, correct), the dense instantiation was made main's code again (its own parameter
# struct without the tail map, main's producer item loop and tile count): its SASS matches main's
# kernel but for 3 instructions at a consumer's item start. Checks: the FP8 suite (6 varlen kernel
# cases), memcheck and racecheck of the kernel cases, dense speed against main (bench/ab_probe.py,
# 3 rounds: expect 1.00; its last line, varlen16, is main's dequantized path against this
# branch's kernel on a packed prefill batch), the Python FP8 tests. On this branch, build:
#   rm -f carry/* && CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh s46v gpuattn_cuda_tests gpuattn_fp8_probe
# and main's probe (git checkout main; ninja -C build-s38 gpuattn_fp8_probe; xz -c
# build-s38/tools/gpuattn_fp8_probe > /tmp/main-probe.xz; git checkout wip/fp8-varlen; cp
# /tmp/main-probe.xz carry/). Run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/next-call-fp8-varlen.sh 2>&1 | tee $OUT/log.txt
# If it passes at ~1.00: merge the branch into main (fwd_sm90.h and attention.h differ in comments).
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s46v && tar xJf carry/s46v.tar.xz -C /tmp/s46v --strip-components 1 || exit 1
xz -dc carry/main-probe.xz > /tmp/main-probe && chmod +x /tmp/main-probe
T=/tmp/s46v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 120 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "lens|Failure" -A2 $OUT/fp8.txt | head -12
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
timeout 200 python3 bench/ab_probe.py --rounds 3 /tmp/main-probe /tmp/s46v/gpuattn_fp8_probe -- 30
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 120 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -2 $OUT/pytest.txt
