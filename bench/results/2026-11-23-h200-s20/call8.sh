#!/usr/bin/env bash
# Device call 8: decode_q8_16x64, the 8-bit decode kernel's own entry in the tile table (what
# cuda_forward_kernel and --show-config report for a quantized decode call; it was decode_16x64):
# the GPU suites that pick or run decode kernels (QuantizedKvCuda now checks the kernel each case
# runs), on the default path and under GPUATTN_KERNEL=sm80 (ctest's sm80. copies), and the Python
# kvcache tests.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 400 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -2 $OUT/build.log
timeout 120 ctest --test-dir build-gpu -R "Quantized|TileConfig|Paged|Decode|SequsedK|AppendKv" -j 8 > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  " $OUT/ctest.log | head -8
PYTHONPATH=build-gpu/python timeout 60 python3 -m pytest -q tests/python/test_flash_api.py -k "quantized or kvcache" > $OUT/pytest.log 2>&1; ts "pytest rc=$?"
tail -2 $OUT/pytest.log
