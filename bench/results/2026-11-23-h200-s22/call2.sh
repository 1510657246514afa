#!/usr/bin/env bash
# Device call 2: item chains with the producer one item ahead (1d24538) — the chain-heavy GPU tests first (a hang shows as a
# timeout), QuantizedKvCuda (the twenty-first session's untested helper), then same-run A/Bs
# against main before the chains (.snap = 323f967): default shapes 3 rounds, the sweep 2 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 150 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*Chains*:*ManyRowBlocks*:*QuantizedKvCuda*:*HeadDim256/*:*CapturedInACudaGraph*' > $OUT/tests.log 2>&1; ts "tests rc=$?"
grep -E "PASSED|FAILED|tests ran" $OUT/tests.log | head -20
mkdir -p $OUT/s1 $OUT/s2
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 170 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| case\|^| head" | head -16
left=$((585 - $(date +%s) + t0))
AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout $left scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | grep -v "^| case" | head -46
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1 s2
