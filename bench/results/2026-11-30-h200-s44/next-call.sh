#!/usr/bin/env bash
# For the next session's first device call: the two FP8 kernel cases added in d7599da
# (bf16 B1 H16/2 520 x 700; f16 B1 H32/4 1100 x 900 causal, 288 items) have run only on the
# hybrid's pass path (calls 8-9), not on main's kernel (in-kernel V transposes everywhere), and the
# two packed-K/V cases (strided V through the V tensor map, new in this kernel) not at all. The FP8
# suite, then memcheck and racecheck of its kernel cases, then gpuattn_fp8_probe twice (a record
# of main's kernel), then the Python module built there and test_fp8_attention.py on CUDA (the
# negative-descale checks with check_indices=False were added after call 8). Build here first:
#   CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh s45a gpuattn_cuda_tests gpuattn_fp8_probe
# then run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-30-h200-s44/next-call.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s45a}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "Sq520|Sq1100|packed|Failure" -A3 $OUT/fp8.txt | head -30
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 200 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
for round in 1 2; do timeout 60 /tmp/$v/gpuattn_fp8_probe 30 | sed "s/^/r$round /"; done
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j16 >> /tmp/build.txt 2>&1 ) || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 150 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -3 $OUT/pytest.txt
