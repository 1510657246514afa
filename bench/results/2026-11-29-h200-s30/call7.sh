#!/usr/bin/env bash
# s30 call 7: paged_decode.py's new GPU path (rounds, the host check through
# bench_common.time_rows), and quantized_decode.py through the shared helper.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
W=$OUT/work; mkdir -p $W
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && cmake --build build-gpu -j16 > $W/build.log 2>&1
echo "build rc $? in $(( $(date +%s) - t0 )) s"
PYTHONPATH=$PWD/build-gpu/python:$PWD/bench timeout 150 python3 bench/paged_decode.py --repeats 2 --json $W/paged_decode.json > $W/paged_decode.log 2>&1
echo "== paged_decode rc $?"; grep -vi "warn" $W/paged_decode.log | cut -c1-125
PYTHONPATH=$PWD/build-gpu/python:$PWD/bench timeout 100 python3 bench/quantized_decode.py --quick --repeats 1 --json $W/qd.json > $W/qd.log 2>&1
echo "== quantized_decode --quick rc $?"; grep -vi "warn" $W/qd.log | cut -c1-125
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
