#!/usr/bin/env bash
# Session 66, call 4: cache_leftpad through the fast path (be20adc and after), on CUDA: build the
# Python module here, run test_fast_path and test_cache_leftpad with torch on the GPU, then
# bench/leftpad_decode.py with unchecked rows on both sides. Expectation: leftpad / plain within
# 1.00-1.05 checked (one more 4-byte-a-sequence host copy), 0.98-1.03 unchecked.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s66/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s66-call4}
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target _C >> $OUT/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"; tail -2 $OUT/build.log
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py \
  tests/python/test_cache_leftpad.py > $OUT/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 $OUT/pytest.log)"; grep -E '^FAILED|^ERROR' $OUT/pytest.log | head
python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py -k "leftpad and cuda" 2>&1 | tail -1
timeout $(( 560 - ($(date +%s) - start) )) python3 bench/leftpad_decode.py --json $OUT/leftpad.json \
  --md $OUT/leftpad.md > $OUT/leftpad.log 2>&1
echo "leftpad_decode rc $?"; tail -18 $OUT/leftpad.log
echo "done after $(( $(date +%s) - start )) s"
