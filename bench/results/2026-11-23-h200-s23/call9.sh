#!/usr/bin/env bash
# Device call 9: ncu (base clocks) of the sweep points still under 1.05x cuDNN at b2f6a1f's kernels
# (HEAD: records only since), ours against cuDNN on the same inputs: causal D64 S512 and S1024,
# D128 S512, causal D256 S1024. Pipes and warp stall reasons.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > /dev/null 2>&1
timeout 150 cmake --build build-gpu -j16 --target all > $OUT/build.log 2>&1; ts "build rc=$?"
mkdir -p $OUT/ncu
NCU_BUILD_DIR=build-gpu OUT=$OUT/ncu timeout 400 scripts/ncu-pipes.sh causal-d64-512 causal-d64-1024 dense-d128-512 causal-d256-1024 > $OUT/ncu.log 2>&1; ts "ncu rc=$?"
grep -B2 -A30 "^| " $OUT/ncu.log | head -150
cd $OUT && rm -f ncu/*.ncu-rep && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf ncu
