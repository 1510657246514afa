#!/usr/bin/env bash
# s28 call 7: tools/host_probe.cu, the host time of an attention call through the C++ API and of
# the runtime calls it makes (the GPU kept busy), beside bench/host_overhead.py's Python figures.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null && cmake --build build-gpu -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
for i in 1 2; do build-gpu/tools/gpuattn_host_probe 200; done 2>&1 | tee $OUT/host_probe.log
PYTHONPATH=$PWD/build-gpu/python python3 bench/host_overhead.py --json $OUT/host_overhead.json > $OUT/host_overhead.log 2>&1
echo "host_overhead rc $?"; head -10 $OUT/host_overhead.log
