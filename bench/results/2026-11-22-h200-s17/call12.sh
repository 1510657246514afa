#!/usr/bin/env bash
# Device call 12: GPT-2 1.5B (random weights) B1 generate, ours against HF in one run, with parity.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
GPUATTN_COMMIT=$(cat .commit) timeout 540 python3 bench/gpt2_generate.py --gpuattn $B/tools/gpuattn --size 1558m --cases "generate B1" --json $OUT/gpt2-1558m.json 2>&1 | grep -v Writing | tail -8
