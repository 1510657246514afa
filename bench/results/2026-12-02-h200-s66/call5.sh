#!/usr/bin/env bash
# Session 66, call 5: the review's fixes (a paged / batch-index decode call with leftpad_k runs
# decode_16x64 on a gathered copy and the pick says so; quantized decode plans split the most
# keys a sequence attends to, not the longest end). The CUDA test binary built on the CPU
# machine (carry/s66t.tar.xz), the Python module here; the CUDA suites that cross these paths (SeqUsedKCuda, PagedKvCuda,
# QuantizedKvCuda, Fp8AttentionCuda) and Python's leftpad, batch-index and fast-path files on CUDA.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s66/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target _C >> $OUT/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"; tail -1 $OUT/build.log
mkdir -p /tmp/s66t && tar xJf carry/s66t.tar.xz -C /tmp/s66t --strip-components 1
T=/tmp/s66t/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='SeqUsedKCuda.*:PagedKvCuda.*:QuantizedKvCuda.*:Fp8AttentionCuda.*' \
  > $OUT/cuda-tests.log 2>&1
echo "cuda tests rc $?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda-tests.log | tr '\n' ' ')"
grep -E '^\[  FAILED' $OUT/cuda-tests.log | head
echo "after $(( $(date +%s) - start )) s"
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python
timeout $(( 300 - ($(date +%s) - start) )) python3 -m pytest -q -p no:cacheprovider \
  tests/python/test_cache_leftpad.py tests/python/test_cache_batch_idx.py \
  tests/python/test_fast_path.py > $OUT/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 $OUT/pytest.log)"; grep -E '^FAILED|^ERROR' $OUT/pytest.log | head
echo "done after $(( $(date +%s) - start )) s"
