#!/usr/bin/env bash
# Device call 13: the Python binding gpu_attention.Gpt2Engine on CUDA (its pytest against the numpy
# GPT-2), and the engine suites at the final code.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { grep -E "error" -A3 $OUT/build.log | head -40; exit 1; }
PYTHONPATH=$B/python timeout 200 python3 -m pytest -q -p no:cacheprovider -rs tests/python/test_gpt2_engine.py 2>&1 | tail -5
timeout 200 ctest --test-dir $B -R 'Gpt2|Json|Safetensors|tools.generate' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
