#!/usr/bin/env bash
# Device call 11: tools/launch_floor.cu as templated on its parameter size (4f86aa0, not rerun on a
# GPU in the tenth session), 300 calls a row.
set -u
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
B=/tmp/b11
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_PYTHON=OFF > $OUT/cfg.log 2>&1 && cmake --build $B -j16 --target gpuattn_launch_floor > $OUT/build.log 2>&1; ts "build rc=$?"
$B/tools/gpuattn_launch_floor 300 | tee $OUT/floor.md; ts floor
