#!/usr/bin/env bash
# Device call 5: the whole ctest (every suite, both dispatches) at the paged-KV code; then
# bench/paged_decode.py with page 16 in order (is the page-16 gap the scattered pool or the
# per-row addressing?).
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
PYTHONPATH=$B/python timeout 120 python3 bench/paged_decode.py --json $OUT/paged_decode.json > $OUT/paged_decode.log 2>&1
grep -E "L[0-9]+ D|page 16|page 64 u|dense " $OUT/paged_decode.log
timeout 420 ctest --test-dir $B -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout|Total Test" $OUT/ctest.log | head -20
