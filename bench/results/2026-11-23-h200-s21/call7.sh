#!/usr/bin/env bash
# Device call 7: ncu's pipe activity and stall reasons of ours against cuDNN (scripts/ncu-pipes.sh)
# at the sweep points still under 1.05x cuDNN that no session profiled yet: D128 S512 and S1024
# non-causal, D128 causal S512, D256 causal S1024 (kernels as main's).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > $OUT/configure.log 2>&1
timeout 330 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
OUT=$OUT/ncu timeout $((590 - $(date +%s) + t0)) scripts/ncu-pipes.sh dense-d128-512 dense-d128-1024 causal-d128-512 causal-d256-1024 > $OUT/ncu-pipes.log 2>&1
ts "ncu rc=$?"; grep -E "^==|^\|" $OUT/ncu-pipes.log
cd $OUT && tar czf ncu.tgz ncu/*.md ncu/*-raw.csv 2>/dev/null; rm -rf ncu
