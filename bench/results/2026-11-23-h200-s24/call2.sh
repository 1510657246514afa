#!/usr/bin/env bash
# Device call 2 (a fresh machine: the first try found none warm): the one test call 1's ctest had not
# finished in its time (python.pytest, started last), then the sanitizer half (memcheck, racecheck
# on small shapes of every kernel, and verify) of wip/d128-short-stages.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 200 ctest --test-dir build-gpu -R python.pytest --timeout 190 > $OUT/pytest.log 2>&1; ts "pytest rc=$?"
grep -E "tests passed|tests failed|Passed|Failed" $OUT/pytest.log | head -4
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 timeout 380 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; ts "gpu-check rc=$?"
grep -E "PASS|FAIL|ERROR|rc=|passed|memcheck|racecheck" $OUT/gpu-check.log | tail -40
