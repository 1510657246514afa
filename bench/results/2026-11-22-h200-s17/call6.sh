#!/usr/bin/env bash
# Device call 6: GEMM autotuning for decode shapes, the head by row count: the engine suites, the
# full bench/gpt2_generate.py, and ncu per-kernel times of B1 and B128 decode steps.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
timeout 200 ctest --test-dir $B -R 'Gpt2|Json|Safetensors' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
grep -B2 -A12 "Failure" $OUT/ctest.log | head -60
GPUATTN_COMMIT=$(cat .commit) timeout 300 python3 bench/gpt2_generate.py --gpuattn $B/tools/gpuattn --json $OUT/gpt2.json 2>&1 | grep -v Writing | tail -12
ncu --metrics gpu__time_duration.sum --clock-control none --print-summary per-kernel \
  $B/tools/gpuattn generate --random 124m --batch 1 --prompt-len 16 --max-new 6 --warmup 0 > $OUT/ncu-b1.txt 2>&1
ncu --metrics gpu__time_duration.sum --clock-control none --print-summary per-kernel \
  $B/tools/gpuattn generate --random 124m --batch 128 --prompt-len 64 --max-new 3 --warmup 0 > $OUT/ncu-b128.txt 2>&1
