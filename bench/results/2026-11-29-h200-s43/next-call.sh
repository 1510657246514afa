#!/usr/bin/env bash
# For the next session's first device call (s43's device time was spent before these ran): the
# review mends at s43's HEAD, compiled here only, and the Python FP8 decode. The FP8 suite (its 3 new cases of more items
# than SMs and the broadcast K/V test, which also runs the 16-bit path with expanded K/V heads and
# batches through strides_fit_tma), then the whole GPU suite, then memcheck of the FP8 kernel
# cases (the kernel's maps now come before its transpose launch), then the Python module built
# there and the Python FP8 tests on CUDA (flash_attn_with_kvcache's FP8 decode has not run on a
# GPU; the device's Python is 3.12, ours 3.11). Build here first:
#   CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh s44a gpuattn_cuda_tests
# then run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-29-h200-s43/next-call.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s44a}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "fp8 |Failure" -A3 $OUT/fp8.txt | head -60
timeout 330 $T --gtest_brief=1 > $OUT/suite.txt 2>&1
echo "suite rc $? $(tail -2 $OUT/suite.txt | tr '\n' ' ')"
grep -B2 -A10 "Failure" $OUT/suite.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $SAN --tool memcheck --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt)"
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $OUT/build.txt 2>&1 && \
  cmake --build $B --target _C -j16 >> $OUT/build.txt 2>&1 ) || { echo build failed; tail -30 $OUT/build.txt; exit 1; }
rm -f $OUT/build.txt
PYTHONPATH=$B/python timeout 300 python3 -m pytest -q tests/python/test_fp8_attention.py tests/python/test_fast_path.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -5 $OUT/pytest.txt
