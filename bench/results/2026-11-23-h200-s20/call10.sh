#!/usr/bin/env bash
# Device call 10: the whole GPU test suite at main after this session's dispatch changes
# (decode_q8_16x64 in pick_forward_kernel, decode_takes' shared-memory check): ctest, every
# prefix (default, sm80., sm90_192.), the engine and distributed suites that one GPU runs.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 300 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
left=$((580 - $(date +%s) + t0))
timeout $left ctest --test-dir build-gpu -j 8 --timeout 200 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  |Timeout" $OUT/ctest.log | head -12
grep -c " Passed " $OUT/ctest.log; grep -c "Skipped" $OUT/ctest.log
