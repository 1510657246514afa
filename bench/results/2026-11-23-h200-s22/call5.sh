#!/usr/bin/env bash
# Device call 5 (main, kernels as at 323f967): the ShortItems GPU suite (both kernels' ctest
# copies), mufu_probe with its half-precision mode, then the timing half with every sweep point
# timed in turn with the anchors.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 120 ctest --test-dir build-gpu -R ShortItems -j 8 --timeout 100 > $OUT/ctest-short.log 2>&1; ts "ctest ShortItems rc=$?"
grep -E "tests passed|tests failed|Failed|Timeout" $OUT/ctest-short.log | head -8
timeout 60 build-gpu/tools/gpuattn_mufu_probe > $OUT/mufu.log 2>&1; ts "mufu rc=$?"
grep -E "^\| (exponentials alone|two warps|half)" $OUT/mufu.log
mkdir -p $OUT/t
left=$((590 - $(date +%s) + t0))
GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 OUT=$OUT/t timeout $left scripts/gpu-check.sh > $OUT/t/console.log 2>&1
ts "gpu-check rc=$?"
grep -E "^\| " $OUT/t/summary.md | head -12
grep -A42 "timed in turn" $OUT/t/summary.md
cd $OUT && tar czf /tmp/all.tgz . ; mv /tmp/all.tgz . ; find . -maxdepth 1 -type f ! -name all.tgz -delete; rm -rf t
