#!/usr/bin/env bash
# s40 call 9: the 8-bit cache's decode kernel with one block-table entry a warp and tile where pages
# hold whole warps' rows (a multiple of 16 keys), rows stepped from it, against call 7's kernel
# (the tree without call9-q8.patch, as at 5dcb1b6); both built here, bench/quantized_decode.py each.
# Expected: e4m3 pages of 16 toward the dense rows (call 7: 98.9 against 83.5 us at B32 L4096,
# 40.1 against 33.7 at D64): 5-15% faster paged, dense unchanged.
# (As run, the old kernel was a copy of the file; the copy is now this patch, the change as
# committed in 372eccc: run at 372eccc, it gives the same old file.)
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call9.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
R=$PWD
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON; }
mkdir -p /tmp/old && tar cf - --exclude=./build-gpu --exclude=./carry . | tar xf - -C /tmp/old
(cd /tmp/old && patch -s -R -p1 < bench/results/2026-11-29-h200-s40/call9-q8.patch)
{ cfg . build-gpu && cmake --build build-gpu -j16 --target gpuattn_cuda_tests _C; } > $OUT/build.log 2>&1
ts "build new rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
timeout 60 $T --gtest_filter='*Quantized*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='QuantizedKvCuda.DecodeReads*' --gtest_brief=1 > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1) $(grep -E 'tests? ran' $OUT/racecheck.txt)"
{ cfg /tmp/old /tmp/old/build && cmake --build /tmp/old/build -j16 --target _C; } > $OUT/build-old.log 2>&1
ts "build old rc $?"
for v in old new; do
  if [ $v = old ]; then P=/tmp/old/build/python; else P=$R/build-gpu/python; fi
  PYTHONPATH=$P timeout 60 python3 bench/quantized_decode.py --json $OUT/qd-$v.json --repeats 3 > $OUT/qd-$v.log 2>&1
  ts "quantized_decode $v rc $?"
done
xz -9 $OUT/build.log $OUT/build-old.log
for v in old new; do echo "== $v"; grep -E "^[a-z]|e4m3|int8" $OUT/qd-$v.log | head -30; done
