# Call 4 (nvidia-h200): the committed 8-bit decode (3 CTAs per SM): the whole CUDA suite, the
# Python API tests on the GPU, and bench/quantized_decode.py.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build build-gpu -j16 --target gpuattn_cuda_tests _C 2>&1 | grep -E "error|FAILED" | head; echo build done
timeout 330 build-gpu/tests/gpuattn_cuda_tests --gtest_brief=1 > $OUT/cuda_tests.log 2>&1; echo "cuda tests rc=$?"; grep -E "FAILED|PASSED|Failure|tests ran|out at" $OUT/cuda_tests.log | head -20
PYTHONPATH=build-gpu/python timeout 120 python3 -m pytest -q tests/python/test_flash_api.py 2>&1 | tail -2
PYTHONPATH=build-gpu/python:bench timeout 150 python3 bench/quantized_decode.py --json $OUT/quantized_decode.json 2>&1 | tail -45
