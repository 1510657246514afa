#!/usr/bin/env bash
# Device call 3: the chain tests at the fix (this tree), then which part of call 2's slowdown is
# whose: A = main before the chains (.snap, 323f967); B = this tree; .nr = this tree with the
# producer's old order (no early post of the next item); .c1 = call 1's tree (0454206). Default
# shapes, 3 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 150 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*Chains*:*ManyRowBlocks*:*QuantizedKvCuda*:*HeadDim256/*:*CapturedInACudaGraph*' > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
mkdir -p $OUT/s1
left=$((585 - $(date +%s) + t0))
AB_B_DIRS=". .nr .c1" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout $left scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| head" | head -40
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1
