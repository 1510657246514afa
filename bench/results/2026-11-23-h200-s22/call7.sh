#!/usr/bin/env bash
# Device call 7: whole tiles (this tree, the mask code out of the step loop of fully seen tiles) — the causal, short-item and many-block GPU tests under the
# sm_90a kernel, then same-run A/Bs against main before it (.snap = 6a74494, kernels as at
# 323f967): default shapes 3 rounds, the sweep 2 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 150 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*causal*:*ShortItems*:*ManyRowBlocks*:*AwkwardLengths*:*HeadDim256/*:*varlen*:*Window*:*window*' > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -12
mkdir -p $OUT/s1 $OUT/s2
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 170 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| case\|^| head" | head -16
left=$((585 - $(date +%s) + t0))
AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout $left scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | grep -v "^| case" | head -46
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1 s2
