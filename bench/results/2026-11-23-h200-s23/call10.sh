#!/usr/bin/env bash
# Device call 10: D128 with 3 K/V stages and one Q buffer (.x: kStages 3 at head dim 128, so
# kQBuffers 1 and the early Q release with O staged through the last tile's stage, as at D256),
# after call 9's ncu had our D128 S512 waiting on loads (long_scoreboard 1.34 warps per issue
# against cuDNN's 0.70). The D128 GPU tests of .x, then A/Bs against HEAD (.snap): D128 sweep
# 3 rounds, default shapes 2 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S .x -B build-x -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-x -j16 --target gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 120 build-x/tests/gpuattn_cuda_tests --gtest_filter='*D128*:*BlockSparse*:*Window*:*window*' > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
mkdir -p $OUT/s1 $OUT/s2
AB_B_DIRS=".x" AB_SHAPES=sweep AB_ONLY="D128" AB_SPARSE=0 OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab D128 rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -16
left=$((585 - $(date +%s) + t0))
[ $left -gt 40 ] && AB_B_DIRS=".x" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s2 timeout $left scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -16
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1 s2
