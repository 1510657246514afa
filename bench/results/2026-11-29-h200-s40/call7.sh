#!/usr/bin/env bash
# s40 call 7: the 8-bit KV cache's decode kernel with each warp loading the rows it reads (only
# __syncwarp a tile) and a shift for pages of a power of two, against the same tree with the old
# kernel (the tree without call7-q8.patch, as at 362e503), both built here; bench/quantized_decode.py
# for both (cuDNN / flash on the bf16 cache as anchors in each run).
# Expected: as the 16-bit kernel's change (probe: long rows -6 to -17%): 8-bit rows 3-15% faster.
# (As run, the old kernel was a copy of the file; the copy is now this patch, the change as
# committed in de52c91: run at de52c91, it gives the same old file.)
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call7.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
R=$PWD
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON; }
mkdir -p /tmp/old && tar cf - --exclude=./build-gpu --exclude=./carry . | tar xf - -C /tmp/old
(cd /tmp/old && patch -s -R -p1 < bench/results/2026-11-29-h200-s40/call7-q8.patch)
{ cfg . build-gpu && cmake --build build-gpu -j16; } > $OUT/build.log 2>&1
ts "build new rc $?"
{ cfg /tmp/old /tmp/old/build && cmake --build /tmp/old/build -j16 --target _C; } > $OUT/build-old.log 2>&1
ts "build old rc $? $(ls /tmp/old/build/python/gpu_attention | tr '\n' ' ')"
T=build-gpu/tests/gpuattn_cuda_tests
timeout 100 $T --gtest_filter='*Quantized*:*Decode*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='QuantizedKvCuda.*' --gtest_brief=1 > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1) $(grep -E 'tests? ran' $OUT/racecheck.txt)"
for round in 1 2; do
  for v in old new; do
    if [ $v = old ]; then P=/tmp/old/build/python; else P=$R/build-gpu/python; fi
    PYTHONPATH=$P timeout 150 python3 bench/quantized_decode.py --json $OUT/qd-$v-$round.json --repeats 3 > $OUT/qd-$v-$round.log 2>&1
    ts "quantized_decode $v round $round rc $?"
  done
done
for f in $OUT/qd-*-1.log; do echo "== $f"; grep -E "^[a-z]|8-bit|e4m3|int8|cudnn" $f | head -40; done
