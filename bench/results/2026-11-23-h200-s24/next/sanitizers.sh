#!/usr/bin/env bash
# python.pytest, then the sanitizer half (memcheck, racecheck on small shapes of every kernel,
# and verify).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 230 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 200 ctest --test-dir build-gpu -R python.pytest --timeout 190 > $OUT/pytest.log 2>&1; ts "pytest rc=$?"
grep -E "tests passed|tests failed|Passed|Failed" $OUT/pytest.log | head -4
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 timeout 330 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; ts "gpu-check rc=$?"
# (the logs are in $OUT/logs.tar.gz; read here from a copy, so that $OUT keeps few files)
mkdir -p /tmp/sl && tar xzf $OUT/logs.tar.gz -C /tmp/sl 2>/dev/null
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" /tmp/sl/memcheck-*.log /tmp/sl/racecheck-*.log | sort | uniq -c
grep -hE "all passed|FAILED" /tmp/sl/verify.log | tail -2
