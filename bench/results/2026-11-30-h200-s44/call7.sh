#!/usr/bin/env bash
# s44 call 7: the kept kernel (V transposed in shared memory, 3-stage V^T ring). The whole GPU
# suite, memcheck and racecheck of the FP8 kernel cases, gpuattn_fp8_probe (carry s44g), then the
# Python module built here, the Python FP8 tests on CUDA and bench/fp8_attention.py (anchors in
# the same run).
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s44g}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 330 $T --gtest_brief=1 > $OUT/suite.txt 2>&1
echo "suite rc $? $(tail -2 $OUT/suite.txt | tr '\n' ' ')"
grep -B2 -A10 "Failure" $OUT/suite.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
timeout 60 /tmp/$v/gpuattn_fp8_probe 30 > $OUT/probe.txt 2>&1; echo "probe rc $?"
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 120 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -2 $OUT/pytest.txt
PYTHONPATH=$B/python timeout 240 python3 bench/fp8_attention.py --json $OUT/fp8.json > $OUT/bench.txt 2>&1
echo "bench rc $?"; grep -v -i warn $OUT/bench.txt | tail -20
