#!/usr/bin/env bash
# Session 67, call 2: the rotary append (AppendKvArgs::rotary_cos/rotary_sin, q/q_out: k rotated
# in the append kernel, q beside it, every position checked on the append's one host copy), which
# flash_attn_with_kvcache(rotary_cos=) now calls. The CUDA test binary built on the CPU machine
# (carry/s67u.tar.xz), the Python module here; the CUDA suites that cross the append and rotary
# (and memcheck of the rotary ones), the Python kvcache files on CUDA, bench/rotary_bench.py.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s67/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target _C >> $OUT/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"; tail -1 $OUT/build.log
mkdir -p /tmp/s67u && tar xJf carry/s67u.tar.xz -C /tmp/s67u --strip-components 1
T=/tmp/s67u/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='AppendKvCuda.*:RotaryCuda.*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*' \
  > $OUT/cuda-tests.log 2>&1
echo "cuda tests rc $?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/cuda-tests.log | tr '\n' ' ')"
grep -E '^\[  FAILED' $OUT/cuda-tests.log | head
timeout 150 compute-sanitizer --tool memcheck $T \
  --gtest_filter='AppendKvCuda.Rotary*:AppendKvCuda.ARotary*:RotaryCuda.Varlen*' > $OUT/memcheck.log 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log)"
echo "after $(( $(date +%s) - start )) s"
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python:$PWD/bench
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/python/test_rotary.py \
  tests/python/test_cache_leftpad.py tests/python/test_cache_batch_idx.py \
  tests/python/test_fast_path.py > $OUT/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 $OUT/pytest.log)"; grep -E '^FAILED|^ERROR' $OUT/pytest.log | head
timeout $(( 570 - ($(date +%s) - start) )) python3 bench/rotary_bench.py --repeats 3 \
  --json $OUT/rotary.json --md $OUT/rotary.md > $OUT/rotary.log 2>&1
echo "bench rc $?"; cat $OUT/rotary.md 2>/dev/null || tail -20 $OUT/rotary.log
echo "done after $(( $(date +%s) - start )) s"
