#!/usr/bin/env bash
# Device call 9: the whole GPU test suite at main with the exp turns (build with tests, ctest:
# every prefix, the engine and distributed suites one GPU runs).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 300 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
left=$((585 - $(date +%s) + t0))
timeout $left ctest --test-dir build-gpu -j 8 --timeout 200 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/ctest.log | head -12
grep -c " Passed " $OUT/ctest.log; grep -c "Skipped" $OUT/ctest.log
