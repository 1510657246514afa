#!/usr/bin/env bash
# Device call 4 (debug build, not committed code: printf of each pair CTA's rank and first item,
# a __device__ mode switch): call 3's pairs failed every D128/D256 non-causal test of an even
# block count. One test under GPUATTN_SM90_PAIRS=0 (no pairs), 1 (multicast), 2 (pairs, relay,
# but each CTA loads its whole tiles itself).
set -u
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_WGMMA_GUARD=OFF > $OUT/cmake.log 2>&1
timeout 200 cmake --build build-gpu -j16 --target gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc=$?"
for m in 0 1 2 3 4; do
  GPUATTN_SM90_PAIRS=$m timeout 30 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*f16_B1_H32_S1024_D128:*f16_B2_H4_Sq160_Sk1040_D256' --gtest_brief=1 > $OUT/t$m.log 2>&1; ts "mode $m rc=$?"
  grep DEBUG $OUT/t$m.log | sort | uniq | head -8; grep -E "FAILED|PASSED|rel_err" $OUT/t$m.log | head -6
done
