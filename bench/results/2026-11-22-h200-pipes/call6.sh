#!/usr/bin/env bash
# Device call 6: wip/early-post (the dense kernel posts the CTA's first item into the ring before
# __syncthreads) against main (.snap): the default shapes 3 rounds, A and B in turn; then its GPU
# tests on the default path (ctest without the forced-kernel prefixes), verify, and racecheck on
# two dense shapes.
set -u
export GPUATTN_COMMIT=early-post
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 240 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab rc=$?"
cat $OUT/s1/ab/summary*.md 2>/dev/null | grep -v "^$" | head -30
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 150 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 170 ctest --test-dir build-gpu -E "^(sm80|sm90_192)\." -j 8 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|Failed|\*\*\*" $OUT/ctest.log | head -12
timeout 100 build-gpu/tools/gpuattn verify --device cuda > $OUT/verify.log 2>&1; ts "verify rc=$?"; tail -1 $OUT/verify.log
for tool in racecheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 1 build-gpu/tests/gpuattn_cuda_tests \
    --gtest_filter='AwkwardLengths/*D64*:GroupedHeads/*H32kv8_S1000_D64' --gtest_brief=1 > $OUT/$tool.log 2>&1
  ts "$tool rc=$?"; grep -E "SUMMARY" $OUT/$tool.log
done
cd $OUT && tar czf all.tgz s1 *.log && rm -rf s1 *.log
