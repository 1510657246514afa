#!/usr/bin/env bash
# Device call 1: sm90_ws_128x128_s4 (causal D64 calls on 2 consumers with 4 K/V stages). Build
# for sm_90a, the host tests (the rule), --show-config, then the whole ctest but python.pytest
# (which call 2 runs): every GPU test on the default dispatch, sm80., sm90_192. and sm90_2stage.
# (the D128 and now the causal D64 cases on the forced 2-stage kernel).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/cmake.log 2>&1
timeout 240 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 40 build-gpu/tests/gpuattn_tests --gtest_brief=1 > $OUT/host.log 2>&1; ts "host tests rc=$?"; tail -2 $OUT/host.log
build-gpu/tools/gpuattn bench --show-config > $OUT/show-config.log 2>&1; grep -E "^\| sm90|s4" $OUT/show-config.log | head -14
left=$((590 - $(date +%s) + t0))
timeout $left ctest --test-dir build-gpu -j 8 --timeout 120 -E python.pytest > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/ctest.log | head -12
echo "passed $(grep -c ' Passed ' $OUT/ctest.log) skipped $(grep -c 'Skipped' $OUT/ctest.log) sm90_2stage $(grep -c 'sm90_2stage\.' $OUT/ctest.log)"
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete
