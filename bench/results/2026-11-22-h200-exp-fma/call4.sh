#!/usr/bin/env bash
# Device call 4: clocks and power (bench/power_probe.py) while ours and cuDNN run the dense D128
# and D64 shapes back to back: is the run-to-run spread of our D128 ratio (1.04-1.12x) the power
# limit taking more clock from our kernel than from cuDNN's?
set -u
export GPUATTN_COMMIT=tree-$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF >$OUT/cfg.log 2>&1 && cmake --build build-gpu -j16 >$OUT/build.log 2>&1; ts "build rc=$?"
nvidia-smi --query-gpu=name,power.limit,power.max_limit,clocks.max.sm,clocks.applications.graphics --format=csv
PYTHONPATH=build-gpu/python timeout 300 python3 bench/power_probe.py --seconds 4 --rounds 2 \
  --case float16,4,16,4096,128 --case bfloat16,4,16,4096,128 --case float16,1,16,16384,128 \
  --case float16,4,32,4096,64 2>&1 | tee $OUT/power.md; ts "probe rc=$?"
