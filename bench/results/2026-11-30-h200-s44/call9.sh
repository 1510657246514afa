#!/usr/bin/env bash
# s44 call 9: call 8's hybrid with the pass path's registers back at s43's 24 / 240 (its one-thread
# producer needs no more). The FP8 suite, gpuattn_fp8_probe against v7 (in-kernel transposes
# everywhere; carry s44i), two rounds in turn; then the Python module and bench/fp8_attention.py.
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s44j}
mkdir -p /tmp/$v /tmp/c && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 && tar xJf carry/s44i.tar.xz -C /tmp/c || { echo "no carry"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 && \
  cmake --build $B --target _C -j12 >> /tmp/build.txt 2>&1 ) & pb=$!
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "Failure" -A5 $OUT/fp8.txt | head -20
for round in 1 2; do
  timeout 60 /tmp/c/variants/v7-vt3 30 | sed "s/^/v7-inside /" >> $OUT/probe.txt 2>&1
  timeout 60 /tmp/$v/gpuattn_fp8_probe 30 | sed "s/^/v11-hybrid /" >> $OUT/probe.txt 2>&1
done
sort -k2,5 -s $OUT/probe.txt | awk '{print $1, $2, $3, $4, $5, $9}'
wait $pb || { echo build failed; tail -30 /tmp/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 150 python3 bench/fp8_attention.py --json $OUT/fp8.json > $OUT/bench.txt 2>&1
echo "bench rc $?"; grep -v -i warn $OUT/bench.txt | tail -20
