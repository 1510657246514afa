#!/usr/bin/env bash
# Session 49, call 5: the FP8 dispatch as landed (head dim 64 on sm90_fp8_192x128 where
# three_consumers_pay, else sm90_fp8_128x128; carry s49d). The FP8 suites (the D64 cases under the
# rule, then forced onto each instantiation), memcheck and racecheck of the D64 cases, the Python
# module built there with the Python FP8 and fast-path tests, and bench/fp8_attention.py at head
# dim 64 (anchors in the same run).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s49/call5.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=s49d
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 200 $T --gtest_filter='Fp8*' > $OUT/suite.txt 2>&1
echo "suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/suite.txt | tr '\n' ' ')"
grep -E '^\[ +(OK|FAILED) ' $OUT/suite.txt | head -30
grep -B2 -A12 "Failure" $OUT/suite.txt | head -40
grep -c "sm90_fp8_192x128" $OUT/suite.txt
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_brief=1 \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 100 python3 -m pytest -q tests/python/test_fp8_attention.py tests/python/test_fast_path.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -2 $OUT/pytest.txt
PYTHONPATH=$B/python timeout 200 python3 bench/fp8_attention.py --head-dim 64 --json $OUT/fp8-d64.json > $OUT/bench-d64.txt 2>&1
echo "bench d64 rc $?"; grep -v -i warn $OUT/bench-d64.txt | tail -20
