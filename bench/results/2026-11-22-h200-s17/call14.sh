#!/usr/bin/env bash
# Device call 14: pinned host buffers and no per-step allocation: the engine suites, the Python
# engine test, and ours B1 / B4 / B32 three times each (call 8 had B1 2,346-2,355 tok/s).
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
timeout 200 ctest --test-dir $B -R 'Gpt2|Json|Safetensors|tools.generate' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
PYTHONPATH=$B/python timeout 100 python3 -m pytest -q -p no:cacheprovider tests/python/test_gpt2_engine.py 2>&1 | tail -1
for i in 1 2 3; do
  for b in "1 16" "4 16" "32 512"; do
    set -- $b
    $B/tools/gpuattn generate --random 124m --batch $1 --prompt-len $2 --max-new 128 | tail -1 | awk -v b=$1 '{print "B" b " tok/s " $7 " ms/step " $8}'
  done
done
