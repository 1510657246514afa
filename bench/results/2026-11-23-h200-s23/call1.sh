#!/usr/bin/env bash
# Device call 1: row sums on the tensor cores (this tree: P times a block of ones in P V's GEMM
# group, D64 and D128 dense kernels; .x: the same plus unsigned stage / phase arithmetic in the
# consumer). GPU tests of this tree (every attention case on the default sm_90a dispatch, the
# D64 ones again on the 3-consumer kernel), then the default shapes against main (.snap = 8301b38)
# with both variants, 2 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 220 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 150 build-gpu/tests/gpuattn_cuda_tests > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
GPUATTN_KERNEL=sm90_ws_192x128 timeout 60 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*D64*' > $OUT/tests192.log 2>&1; ts "tests 192 rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests192.log | head -12
mkdir -p $OUT/s1
left=$((585 - $(date +%s) + t0))
[ $left -gt 100 ] && AB_B_DIRS=". .x" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout $left scripts/ab.sh .snap 2 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -34
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1
