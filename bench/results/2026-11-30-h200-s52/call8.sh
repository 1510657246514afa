#!/usr/bin/env bash
# Session 52, call 8: bench/fp8_attention.py --cudnn-fp8 --quick at head dim 128 at
# main f54d471 (3 consumer warpgroups at head dim 128 on large grids), for the standing against cuDNN's
# FP8 SDPA (call 5 the same before the change).
# carry ["carry/nvidia_cudnn_frontend-1.32.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"]
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call8.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
python3 -m pip install -q --no-deps --no-index --target /tmp/cfe carry/nvidia_cudnn_frontend-*.whl ||
  { echo "wheel install failed"; exit 1; }
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_GPU_TEST_SHARDS=16 -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 &&
  cmake --build $B --target _C -j16 >> /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
for d in 128; do
  PYTHONPATH=$B/python:/tmp/cfe timeout 70 python3 bench/fp8_attention.py --head-dim $d --repeats 3 \
    --quick --cudnn-fp8 --json $OUT/fp8-cudnn-fp8-d$d.json > $OUT/bench-d$d.txt 2>&1
  echo "bench d$d rc $?"; grep -v -i warn $OUT/bench-d$d.txt | tail -5
done
