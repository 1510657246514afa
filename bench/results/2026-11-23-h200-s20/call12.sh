#!/usr/bin/env bash
# Device call 12: the tidy-up commit (one host element loader; the quantized CUDA tests' OnDevice
# helper) on the GPU: the quantized, paged, append and reference-backed suites, default path and
# sm80. copies, and the Python kvcache tests.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 400 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
tail -1 $OUT/build.log
timeout 150 ctest --test-dir build-gpu -R "Quantized|Paged|AppendKv|SeqUsedK|Decode" -j 8 --output-on-failure > $OUT/ctest.log 2>&1; ts "ctest rc=$?"
grep -E "tests passed|tests failed|\*\*\*Failed|Failed  " $OUT/ctest.log | head -8
PYTHONPATH=build-gpu/python timeout 90 python3 -m pytest -q tests/python/test_flash_api.py -k "quantized or kvcache" > $OUT/pytest.log 2>&1; ts "pytest rc=$?"
tail -2 $OUT/pytest.log
