#!/usr/bin/env bash
# s30 call 9: test_fast_path.py on CUDA after its native-call comparison started describing each
# array argument by its tensor (dtype, shape, strides, device).
set -u
cd "$(dirname "$0")/../../.."
W=$OUT/work; mkdir -p $W
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && cmake --build build-gpu -j16 > $W/build.log 2>&1
echo "build rc $?"
PYTHONPATH=$PWD/build-gpu/python timeout 90 python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -1 $W/pytest.log; grep -E "^FAILED|cuda" $W/pytest.log | head
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
