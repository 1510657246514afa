#!/usr/bin/env bash
# Session 43, call 3: the FP8 suite again (LSE bound of the dequantized path), then the Python
# module built here and bench/fp8_attention.py (FP8 vs bf16 ours, cuDNN, flash).
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s43c}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || exit 1
timeout 200 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Fp8*' > $OUT/tests.txt 2>&1
echo "tests rc $?"; grep -E "FAILED|Failure|PASSED" $OUT/tests.txt | head
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $OUT/build.txt 2>&1 && \
  cmake --build $B --target _C -j16 >> $OUT/build.txt 2>&1 ) || { echo build failed; tail -30 $OUT/build.txt; exit 1; }
echo "built at $(date +%T)"
cd bench && PYTHONPATH=$B/python timeout 330 python3 fp8_attention.py --repeats 2 --json $OUT/fp8.json 2>&1 | tee $OUT/fp8.txt
