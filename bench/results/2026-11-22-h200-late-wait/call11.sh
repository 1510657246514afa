#!/usr/bin/env bash
# Device call 11 (ninth session): ncu per-instruction warp states of fp16 B1 H16 S1024 D64 on main
# (what the D64 tile loop waits on).
set -u
export GPUATTN_COMMIT=1ddfcad
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > $OUT/cfg.log 2>&1 && cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
OUT=$OUT/ncu timeout 300 scripts/ncu-source.sh short-d64 > $OUT/ncu.log 2>&1; ts "ncu rc=$?"
rm -f $OUT/ncu/*.ncu-rep
grep -E "Stall|Issued|Eligible|Warp Cycles|No Eligible|Active Warps" $OUT/ncu/short-d64-details.txt | head -30
cd $OUT && tar czf ncu.tgz ncu && rm -rf ncu
