#!/usr/bin/env bash
# Device call 3: dead warpgroups with the exponentials' turns (call 2 hung on the 2-consumer
# D64 kernel's exp turns) and the static schedule's rotation (this tree); .x: dead warpgroups
# without the rotation. The whole GPU test suite (ctest, every prefix), then the D64 sweep
# against main (.snap = 8301b38), 3 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 220 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 330 ctest --test-dir build-gpu -j 8 --timeout 120 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/ctest.log | head -12
grep -c " Passed " $OUT/ctest.log; grep -c "Skipped" $OUT/ctest.log
mkdir -p $OUT/s1
left=$((588 - $(date +%s) + t0))
[ $left -gt 90 ] && AB_B_DIRS=". .x" AB_SHAPES=sweep AB_ONLY="D64" AB_SPARSE=0 OUT=$OUT/s1 timeout $left scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab D64 rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -34
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1
