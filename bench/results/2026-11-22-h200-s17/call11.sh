#!/usr/bin/env bash
# Device call 11: the fused decode GEMV: the engine suites, memcheck of its test, the full
# bench/gpt2_generate.py, and ours with and without the fused GEMV (B1, B4, B32) in one run.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
timeout 200 ctest --test-dir $B -R 'Gpt2|Json|Safetensors|tools.generate' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
grep -B2 -A12 "Failure" $OUT/ctest.log | head -60
compute-sanitizer --tool memcheck --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.FusedDecodeGemv*:Gpt2EngineCuda.Batched*' --gtest_brief=1 2>&1 | tail -2
GPUATTN_COMMIT=$(cat .commit) timeout 300 python3 bench/gpt2_generate.py --gpuattn $B/tools/gpuattn --json $OUT/gpt2.json 2>&1 | grep -v Writing | tail -12
for fg in 1 0 1 0; do
  for b in "1 16" "4 16" "32 512"; do
    set -- $b
    GPUATTN_ENGINE_FUSED_GEMV=$fg $B/tools/gpuattn generate --random 124m --batch $1 --prompt-len $2 --max-new 128 | tail -1 | awk -v fg=$fg -v b=$1 '{print "fused_gemv=" fg " B" b " tok/s " $7 " ms/step " $8}'
  done
done
