# Call 2 (nvidia-h200): the quantized KV cache: its CUDA tests, the decode/paged/seqused/append
# suites the decode refactor touches, the engine's (half_convert.cuh), memcheck of the 8-bit
# decode, and bench/quantized_decode.py against cuDNN/flash on bf16.
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
time cmake --build build-gpu -j16 --target gpuattn_cuda_tests _C 2>&1 | grep -E "error|FAILED" | head; echo build done
timeout 300 build-gpu/tests/gpuattn_cuda_tests --gtest_brief=1 --gtest_filter='QuantizedKvCuda.*:PagedKvCuda.*:SequsedK*:AppendKv*:Gpt2EngineCuda.*:*Decode*' > $OUT/cuda_tests.log 2>&1; echo "cuda tests rc=$?"; grep -E "FAILED|PASSED|Failure|error|tests ran|Expected|Which is|out at" $OUT/cuda_tests.log | head -40
PYTHONPATH=build-gpu/python:bench timeout 200 python3 bench/quantized_decode.py --json $OUT/quantized_decode.json 2>&1 | tail -45
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='QuantizedKvCuda.Append*:QuantizedKvCuda.Bad*:QuantizedKvCuda.Varlen*' --gtest_brief=1 2>&1 | tail -3
