#!/usr/bin/env bash
# Session 67, call 3: the whole CUDA test binary at the session's C++ (carry/s67u.tar.xz, the
# binary of call 2; the commits after it changed Python only) in 8 gtest shards at once, the
# whole Python suite with torch on CUDA (the rotary fast path included), bench/rotary_bench.py.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s67/call3.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s67u && tar xJf carry/s67u.tar.xz -C /tmp/s67u --strip-components 1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/build.log 2>&1 &&
  cmake --build build-gpu -j8 --target _C >> /tmp/build.log 2>&1 &
build=$!
mkdir -p /tmp/logs
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 200 /tmp/s67u/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards and build done after $(( $(date +%s) - start )) s"; tail -1 /tmp/build.log
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python:$PWD/bench
timeout $(( 480 - ($(date +%s) - start) )) python3 -m pytest -q -p no:cacheprovider -x \
  tests/python > /tmp/logs/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 /tmp/logs/pytest.log)"; grep -E '^FAILED|^ERROR' /tmp/logs/pytest.log | head
echo "after $(( $(date +%s) - start )) s"
timeout $(( 585 - ($(date +%s) - start) )) python3 bench/rotary_bench.py --repeats 3 \
  --json $OUT/rotary.json --md $OUT/rotary.md > /tmp/logs/rotary.log 2>&1
echo "bench rc $?"; cat $OUT/rotary.md 2>/dev/null || tail -20 /tmp/logs/rotary.log
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
