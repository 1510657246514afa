#!/usr/bin/env bash
# Session 68, call 2: call 1 plus the decode kernels' two-page path (pages of 16 keys or more that
# a warp's 16 rows may cross: leftpad_k off a multiple of 16, page sizes that are not one): the
# whole CUDA test binary (carry/s68.tar.xz) in 8 shards, memcheck of the paged and leftpad
# suites, the Python cache files on CUDA, bench/leftpad_decode.py --page 16 and 256 against the
# module without the session's changes (s68-src.patch reversed), and the decode kernels'
# registers and spills in both builds (cuobjdump).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s68/call2.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
here=bench/results/2026-12-03-h200-s68
start=$(date +%s)
mkdir -p /tmp/s68 && tar xJf carry/s68.tar.xz -C /tmp/s68 --strip-components 1
# The module twice: this tree, and a copy with the patch reversed (the gathered path).
mkdir -p /tmp/old && tar cf - --exclude=./carry --exclude='./build*' . | tar xf - -C /tmp/old
(cd /tmp/old && patch -s -R -p1 < $here/s68-src.patch) || echo "patch -R failed"
(cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/build.log 2>&1 && cmake --build build-gpu -j8 --target _C \
  >> /tmp/build.log 2>&1; echo "new build rc $?" >> /tmp/build.log) &
(cd /tmp/old && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /tmp/build-old.log 2>&1 &&
  cmake --build build-gpu -j8 --target _C >> /tmp/build-old.log 2>&1;
  echo "old build rc $?" >> /tmp/build-old.log) &
mkdir -p /tmp/logs
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 240 /tmp/s68/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards and builds done after $(( $(date +%s) - start )) s"
tail -1 /tmp/build.log; tail -1 /tmp/build-old.log
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head
timeout 100 compute-sanitizer --tool memcheck /tmp/s68/gpuattn_cuda_tests \
  --gtest_filter='PagedKvCuda.Leftpad*:PagedKvCuda.DecodeReads*:QuantizedKvCuda.Leftpad*:QuantizedKvCuda.DecodeReads*:SeqUsedKCuda.Leftpad*' \
  > /tmp/logs/memcheck.log 2>&1
echo "memcheck rc $?: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python:$PWD/bench
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/python/test_cache_leftpad.py \
  tests/python/test_cache_batch_idx.py tests/python/test_fast_path.py \
  tests/python/test_rotary.py \
  > /tmp/logs/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 /tmp/logs/pytest.log)"; grep -E '^FAILED|^ERROR' /tmp/logs/pytest.log | head
for page in 16 256; do
  for which in new old; do
    root=$PWD; [ $which = old ] && root=/tmp/old
    PYTHONPATH=$root/build-gpu/python:$PWD/bench timeout 100 python3 bench/leftpad_decode.py \
      --page $page --repeats 3 --json $OUT/leftpad-page$page-$which.json \
      --md $OUT/leftpad-page$page-$which.md > /tmp/logs/bench-$page-$which.log 2>&1
    echo "bench page $page $which rc $?"
    cat $OUT/leftpad-page$page-$which.md 2>/dev/null || tail -5 /tmp/logs/bench-$page-$which.log
  done
done
for which in new old; do
  root=$PWD; [ $which = old ] && root=/tmp/old
  for o in $(find $root/build-gpu -name 'fwd_decode*.o'); do
    cuobjdump --dump-resource-usage $o 2>/dev/null | grep -E 'Function|REG' |
      sed -E 's/^[[:space:]]*//' | paste - - | sed -E 's/Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+).*LOCAL:([0-9]+).*/\1 REG \2 STACK \3 LOCAL \4/'
  done > $OUT/resources-$which.txt
done
echo "decode kernels (new vs old), REG STACK LOCAL:"
diff $OUT/resources-old.txt $OUT/resources-new.txt | head -40
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
