#!/usr/bin/env bash
# s44 call 2: the FP8 call's V^T pass against its kernel (vt_probe.py), Python module built here.
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > $OUT/build.txt 2>&1 && \
  cmake --build $B --target _C -j16 >> $OUT/build.txt 2>&1 ) || { echo build failed; tail -30 $OUT/build.txt; exit 1; }
PYTHONPATH=$B/python timeout 200 python3 bench/results/2026-11-30-h200-s44/vt_probe.py
