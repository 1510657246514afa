#!/usr/bin/env bash
# Device call 5: why the short points' ncu (base clocks: D128 S2048 518 vs cuDNN 542 us, D256
# causal S1024 171 vs 194) leads by more than do_bench does at full clocks (1.03x, 1.04x). SM clock
# and board power while ours and cuDNN run each shape back to back (bench/power_probe.py, 3 s a
# phase, 3 rounds, alternating), on the points under 1.05x in call 4.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 --target all > $OUT/build.log 2>&1; ts "build rc=$?"
PYTHONPATH=$PWD/build-gpu/python timeout 300 python3 bench/power_probe.py --seconds 3 --rounds 3 \
  --case float16,8,16,2048,128 --case float16,16,8,1024,256,1 --case float16,32,16,512,128 \
  --case float16,32,8,512,256 --case float16,32,32,512,64,1 --case float16,16,16,1024,128 \
  > $OUT/power.log 2>&1; ts "power rc=$?"
cat $OUT/power.log
