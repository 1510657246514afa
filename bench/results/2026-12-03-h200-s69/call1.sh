#!/usr/bin/env bash
# Session 69, call 1: checked calls' host copies through page-locked staging (src/cuda/
# host_copies.*), one 32-bit offset for K and V in the decode kernels' two-page path, the
# baseline's refusals. The whole CUDA test binary (carry/s69.tar.xz) in 8 shards, memcheck of the
# paged / quantized / seqused / capture suites, the Python cache files on CUDA, and the benches
# old (s69-src.patch reversed) against new: leftpad_decode.py dense (page 0) and --page 16,
# paged_decode.py --quick, quantized_decode.py --quick; the decode kernels' registers in both builds (cuobjdump).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s69/call1.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
here=bench/results/2026-12-03-h200-s69
start=$(date +%s)
mkdir -p /tmp/s69 && tar xJf carry/s69.tar.xz -C /tmp/s69 --strip-components 1
mkdir -p /tmp/old && tar cf - --exclude=./carry --exclude='./build*' . | tar xf - -C /tmp/old
(cd /tmp/old && patch -s -R -p1 < $here/s69-src.patch) || echo "patch -R failed"
(cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/build.log 2>&1 && cmake --build build-gpu -j8 --target _C \
  >> /tmp/build.log 2>&1; echo "new build rc $?" >> /tmp/build.log) &
(cd /tmp/old && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /tmp/build-old.log 2>&1 &&
  cmake --build build-gpu -j8 --target _C >> /tmp/build-old.log 2>&1;
  echo "old build rc $?" >> /tmp/build-old.log) &
mkdir -p /tmp/logs
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 240 /tmp/s69/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards and builds done after $(( $(date +%s) - start )) s"
tail -1 /tmp/build.log; tail -1 /tmp/build-old.log
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
# memcheck and the Python files side by side (correctness only; the benches run after, alone)
timeout 200 compute-sanitizer --tool memcheck /tmp/s69/gpuattn_cuda_tests \
  --gtest_filter='PagedKvCuda.Leftpad*:PagedKvCuda.CheckedCalls*:PagedKvCuda.TablesOf*:QuantizedKvCuda.Leftpad*:QuantizedKvCuda.DecodeReads*:SeqUsedKCuda.Leftpad*:AttentionCudaTest.DecodeReadsReady*' \
  > /tmp/logs/memcheck.log 2>&1 &
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python:$PWD/bench
timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/python/test_cache_leftpad.py \
  tests/python/test_cache_batch_idx.py tests/python/test_fast_path.py \
  tests/python/test_rotary.py tests/python/test_flash_api.py \
  > /tmp/logs/pytest.log 2>&1 &
wait
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -5
echo "pytest: $(tail -1 /tmp/logs/pytest.log)"; grep -E '^FAILED|^ERROR' /tmp/logs/pytest.log | head
echo "tests done after $(( $(date +%s) - start )) s"
# Benches in A B B A order (new old old new), each timing its rows in turn
n=0
for which in new old old new; do
  n=$((n + 1))
  root=$PWD; [ $which = old ] && root=/tmp/old
  for page in 0 16; do
    PYTHONPATH=$root/build-gpu/python:$PWD/bench timeout 60 python3 bench/leftpad_decode.py \
      --page $page --repeats 3 --json $OUT/leftpad-page$page-$which-$n.json \
      --md $OUT/leftpad-page$page-$which-$n.md > /tmp/logs/lp-$page-$which-$n.log 2>&1
    echo "leftpad page $page $which ($n) rc $?"
    cat $OUT/leftpad-page$page-$which-$n.md 2>/dev/null || tail -5 /tmp/logs/lp-$page-$which-$n.log
  done
  PYTHONPATH=$root/build-gpu/python:$PWD/bench timeout 60 python3 bench/paged_decode.py --quick \
    --repeats 3 --json $OUT/paged-$which-$n.json > $OUT/paged-$which-$n.txt 2>&1
  echo "paged_decode $which ($n) rc $?"; tail -20 $OUT/paged-$which-$n.txt
  PYTHONPATH=$root/build-gpu/python:$PWD/bench timeout 60 python3 bench/quantized_decode.py \
    --quick --repeats 3 --json $OUT/quant-$which-$n.json > $OUT/quant-$which-$n.txt 2>&1
  echo "quantized_decode $which ($n) rc $?"; tail -20 $OUT/quant-$which-$n.txt
  echo "after $(( $(date +%s) - start )) s"
done
for which in new old; do
  root=$PWD; [ $which = old ] && root=/tmp/old
  for o in $(find $root/build-gpu -name 'fwd_decode*.o'); do
    cuobjdump --dump-resource-usage $o 2>/dev/null | grep -E 'Function|REG' |
      sed -E 's/^[[:space:]]*//' | paste - - | sed -E 's/Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+).*LOCAL:([0-9]+).*/\1 REG \2 STACK \3 LOCAL \4/' |
      c++filt | sed "s/^/$which /" >> $OUT/regs.txt
  done
done
echo "done after $(( $(date +%s) - start )) s"
