#!/usr/bin/env bash
# Session 57, call 8 (branch wip/s4-late, the last 265 s of device time): a targeted check of the
# only kernel the branch changes, sm90_ws_128x128_s4 (no exp turns, late P V wait; SASS
# byte-identical to call 6's variant C, every other kernel byte-identical to main): every D64
# causal GPU case forced onto it (the sm90_s4. ctest variant's filter) and on the dispatch's
# pick, then memcheck and racecheck of its small causal shapes (gpu-check's sm90_s4 steps).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s57/call8.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 &&
  cmake --build build-gpu -j16 --target gpuattn_cuda_tests >> $OUT/build.log 2>&1
ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
tests() {  # LABEL FILTER ENV...
  for i in 0 1 2 3; do
    env GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i "${@:3}" timeout 100 $T --gtest_brief=1 \
      --gtest_filter="$2" > /tmp/t-$1-$i.log 2>&1 &
  done
  wait
  echo "== $1: $(grep -h -E 'PASSED|FAILED  \] [0-9]' /tmp/t-$1-*.log | tr '\n' ' ')"
  grep -h -E '^\[  FAILED' /tmp/t-$1-*.log | sort -u | head -8
}
{ tests s4 '*D64*causal*' GPUATTN_KERNEL=sm90_ws_128x128_s4; tests auto '*D64*causal*'; } | tee $OUT/tests.txt
ts "tests"
f='AwkwardLengths/*D64*causal*:SeqlenMismatch/*D64*causal*:HalfLastTile/*D64*causal*'
f+=':VarlenNeighbours/*D64*causal*:-*compensated*'
for tool in memcheck racecheck; do
  GPUATTN_KERNEL=sm90_ws_128x128_s4 timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 \
    $T --gtest_filter="$f" --gtest_brief=1 > $OUT/$tool-sm90_s4.log 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "== $tool-sm90_s4: $(grep -h -E 'PASSED|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool-sm90_s4.log | tr '\n' ' ')"
done | tee -a $OUT/tests.txt
ts "sanitizers"
