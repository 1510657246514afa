#!/usr/bin/env bash
# Session 49, call 3: the FP8 kernel at head dim 64 (first GPU run). The FP8 suites (kernel cases
# at D64 and D128, the random calls, the dequantized ones), memcheck and racecheck of the D64
# kernel cases, gpuattn_fp8_probe (D128, against s44's figures), then the Python module built
# there, the Python FP8 tests and bench/fp8_attention.py at D64 (all shapes) and D128 (named).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s49/call3.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=s49a
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E '^\[ +(OK|FAILED) ' $OUT/fp8-suite.txt | head -20
grep -B2 -A12 "Failure" $OUT/fp8-suite.txt | head -60
grep "_D64" $OUT/fp8-suite.txt | head -30
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 100 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
timeout 60 /tmp/$v/gpuattn_fp8_probe 30 > $OUT/probe.txt 2>&1; echo "probe rc $?"; cat $OUT/probe.txt | tail -20
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 100 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -2 $OUT/pytest.txt
PYTHONPATH=$B/python timeout 200 python3 bench/fp8_attention.py --head-dim 64 --json $OUT/fp8-d64.json > $OUT/bench-d64.txt 2>&1
echo "bench d64 rc $?"; grep -v -i warn $OUT/bench-d64.txt | tail -20
PYTHONPATH=$B/python timeout 80 python3 bench/fp8_attention.py --quick --json $OUT/fp8-d128.json > $OUT/bench-d128.txt 2>&1
echo "bench d128 rc $?"; grep -v -i warn $OUT/bench-d128.txt | tail -8
