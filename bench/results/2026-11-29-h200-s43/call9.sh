#!/usr/bin/env bash
# Session 43, call 9: the Python FP8 API (flash_attn_func / flash_attn_varlen_func with
# q/k/v_descale) on the GPU: the Python module built here, then its FP8 and fast-path tests with
# torch on CUDA.
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $OUT/build.txt 2>&1 && \
  cmake --build $B --target _C -j16 >> $OUT/build.txt 2>&1 ) || { echo build failed; tail -30 $OUT/build.txt; exit 1; }
rm -f $OUT/build.txt
PYTHONPATH=$B/python timeout 300 python3 -m pytest -q -x tests/python/test_fp8_attention.py tests/python/test_fast_path.py -rs > $OUT/pytest.txt 2>&1
echo "pytest rc $?"; tail -15 $OUT/pytest.txt
