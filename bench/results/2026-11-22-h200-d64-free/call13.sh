#!/usr/bin/env bash
# Device call 13: the launch floor with 1 KB of kernel parameters (about the sm_90a kernel's), and
# the head-dim-64 tile of the 2- and 3-consumer kernels side by side (GPUATTN_KERNEL forcing each
# on gpuattn bench's default shapes; only the D64 rows apply to both), 3 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
B=/tmp/b13
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_PYTHON=OFF > $OUT/cfg.log 2>&1 && cmake --build $B -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
$B/tools/gpuattn_launch_floor 300 | tee $OUT/floor.md; ts floor
for r in 1 2 3; do
  for k in auto sm90_ws_128x128 sm90_ws_192x128; do
    GPUATTN_KERNEL=$k $B/tools/gpuattn bench --device cuda --shapes default --json $OUT/bench-$k-$r.json > $OUT/bench-$k-$r.log 2>&1
    echo "round $r $k: $(grep -E 'D64 float16' $OUT/bench-$k-$r.log | tr '\n' ' ')"
  done
done; ts "bench"
cd $OUT && tar czf all.tgz bench-* && rm -f bench-*
