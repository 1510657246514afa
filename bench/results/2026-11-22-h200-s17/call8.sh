#!/usr/bin/env bash
# Device call 8: autotuning gone, no separate split-K reduce by default: the engine suites, the
# full bench/gpt2_generate.py, ours with and without split-K reduce kernels (B1, B32, B128) in one
# run, and ncu per-kernel times of B128 prompt 512 (8 prefill steps, 2 decode steps).
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
timeout 200 ctest --test-dir $B -R 'Gpt2|Json|Safetensors|tools.generate' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
grep -B2 -A12 "Failure" $OUT/ctest.log | head -60
GPUATTN_COMMIT=$(cat .commit) timeout 300 python3 bench/gpt2_generate.py --gpuattn $B/tools/gpuattn --json $OUT/gpt2.json 2>&1 | grep -v Writing | tail -12
for sk in 0 1 0 1; do
  for b in "1 16" "32 512" "128 512"; do
    set -- $b
    GPUATTN_ENGINE_SPLIT_K_REDUCE=$sk $B/tools/gpuattn generate --random 124m --batch $1 --prompt-len $2 --max-new 128 | tail -1 | awk -v sk=$sk -v b=$1 '{print "split_k_reduce=" sk " B" b " tok/s " $7 " ms/step " $8}'
  done
done
ncu --metrics gpu__time_duration.sum --clock-control none --print-summary per-kernel \
  $B/tools/gpuattn generate --random 124m --batch 128 --prompt-len 512 --max-new 3 --warmup 0 > $OUT/ncu-b128.txt 2>&1
