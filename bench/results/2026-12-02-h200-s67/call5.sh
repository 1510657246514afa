#!/usr/bin/env bash
# Session 67, call 5: the review's fixes (a varlen call's seqlen_offset always checked, q rotated
# before the append, the bounds searched for rotated pairs only, ...): the whole CUDA test binary
# (carry/s67w.tar.xz) in 8 shards, memcheck of the rotary suites, the Python kvcache and rotary
# files with torch on CUDA, bench/rotary_bench.py.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s67/call5.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s67w && tar xJf carry/s67w.tar.xz -C /tmp/s67w --strip-components 1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/build.log 2>&1 &&
  cmake --build build-gpu -j8 --target _C >> /tmp/build.log 2>&1 &
build=$!
mkdir -p /tmp/logs
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 /tmp/s67w/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards and build done after $(( $(date +%s) - start )) s"; tail -1 /tmp/build.log
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python:$PWD/bench
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/python/test_rotary.py \
  tests/python/test_cache_leftpad.py tests/python/test_cache_batch_idx.py \
  tests/python/test_fast_path.py > /tmp/logs/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 /tmp/logs/pytest.log)"; grep -E '^FAILED|^ERROR' /tmp/logs/pytest.log | head
timeout 150 compute-sanitizer --tool memcheck /tmp/s67w/gpuattn_cuda_tests \
  --gtest_filter='RotaryCuda.*:AppendKvCuda.Rotary*:AppendKvCuda.ARotary*' > /tmp/logs/memcheck.log 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
timeout $(( 585 - ($(date +%s) - start) )) python3 bench/rotary_bench.py --repeats 3 \
  --json $OUT/rotary.json --md $OUT/rotary.md > /tmp/logs/rotary.log 2>&1
echo "bench rc $?"; cat $OUT/rotary.md 2>/dev/null || tail -20 /tmp/logs/rotary.log
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
