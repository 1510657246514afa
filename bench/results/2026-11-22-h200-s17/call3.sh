#!/usr/bin/env bash
# Device call 3: CUDA graphs for decode steps and the test fixes: the engine suites, then the full
# bench/gpt2_generate.py (parity with HF transformers, throughput: all four rows).
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
timeout 200 ctest --test-dir $B -R 'Gpt2|Json|Safetensors' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
grep -B2 -A12 "Failure" $OUT/ctest.log | head -80
GPUATTN_COMMIT=$(cat .commit) timeout 400 python3 bench/gpt2_generate.py --gpuattn $B/tools/gpuattn --json $OUT/gpt2.json 2>&1 | tail -25
