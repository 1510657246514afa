#!/usr/bin/env bash
# Device call 4: dense causal calls take their heads in L2-sized groups, longest first across a
# group (this tree) against 0f186fb (.snap: head by head). The causal GPU tests, then the sweep's
# causal points (3 rounds) and the default shapes (2 rounds).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 220 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 100 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*causal*:*ShortItems*' > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
build-gpu/tests/gpuattn_tests --gtest_filter='WorkSchedule*' 2>&1 | tail -1
mkdir -p $OUT/s1 $OUT/s2
AB_SHAPES=sweep AB_ONLY="causal" AB_SPARSE=0 OUT=$OUT/s1 timeout 250 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab causal sweep rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -24
left=$((585 - $(date +%s) + t0))
[ $left -gt 60 ] && AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s2 timeout $left scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -16
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1 s2
