#!/usr/bin/env bash
# s44 call 8: V^T from the pass before the kernel again for calls with much work per key
# (fp8_vt_pass_pays: Hq / Hkv x rows >= 4096), in-kernel transposes for the rest. The FP8 suite
# (two new cases on the pass), memcheck and racecheck of its kernel cases, gpuattn_fp8_probe of
# this build against call 7's kernel (v7: in-kernel transposes everywhere; carry s44i), two rounds
# in turn; then the Python module built here, the Python FP8 tests on CUDA (check_indices=False,
# graph capture) and bench/fp8_attention.py.
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s44h}
mkdir -p /tmp/$v /tmp/c && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 && tar xJf carry/s44i.tar.xz -C /tmp/c || { echo "no carry"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "Failure|Sq520|Sq1100" -A3 $OUT/fp8.txt | head -30
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 200 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
for round in 1 2; do
  timeout 60 /tmp/c/variants/v7-vt3 30 | sed "s/^/v7-inside /" >> $OUT/probe.txt 2>&1
  timeout 60 /tmp/$v/gpuattn_fp8_probe 30 | sed "s/^/v10-hybrid /" >> $OUT/probe.txt 2>&1
done
sort -k2,5 -s $OUT/probe.txt | awk '{print $1, $2, $3, $4, $5, $9}'
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 120 python3 -m pytest -q tests/python/test_fp8_attention.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -3 $OUT/pytest.txt
PYTHONPATH=$B/python timeout 200 python3 bench/fp8_attention.py --json $OUT/fp8.json > $OUT/bench.txt 2>&1
echo "bench rc $?"; grep -v -i warn $OUT/bench.txt | tail -20
