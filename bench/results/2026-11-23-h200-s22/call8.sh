#!/usr/bin/env bash
# Device call 8: the whole GPU test suite at the whole-tile loop (D64/D128; build with tests,
# ctest: every prefix), then the default shapes against main before it (.snap = 6a74494), 2 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 420 ctest --test-dir build-gpu -j 8 --timeout 200 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/ctest.log | head -12
grep -c " Passed " $OUT/ctest.log; grep -c "Skipped" $OUT/ctest.log
mkdir -p $OUT/s1
left=$((588 - $(date +%s) + t0))
[ $left -gt 100 ] && AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout $left scripts/ab.sh .snap 2 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -16
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1
