#!/usr/bin/env bash
# The whole GPU test suite but python.pytest (which starts last and takes ~100-125 s: run by
# sanitizers.sh), within one device call.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 230 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 500 ctest --test-dir build-gpu -j 8 --timeout 120 -E python.pytest > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/ctest.log | head -12
grep -c " Passed " $OUT/ctest.log; grep -c "Skipped" $OUT/ctest.log
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete
