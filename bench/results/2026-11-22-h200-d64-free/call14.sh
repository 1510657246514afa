#!/usr/bin/env bash
# Device call 14: GPUATTN_KERNEL=sm90_ws_128x128 (new): the D64 rows of gpuattn bench's default
# shapes under auto, forced 2 consumers and forced 3, 3 rounds; then gpuattn verify under the
# forced 2-consumer kernel.
set -u
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
B=/tmp/b14
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_PYTHON=OFF > $OUT/cfg.log 2>&1 && cmake --build $B -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
for r in 1 2 3; do
  for k in auto sm90_ws_128x128 sm90_ws_192x128; do
    GPUATTN_KERNEL=$k $B/tools/gpuattn bench --device cuda --shapes default --json $OUT/bench-$k-$r.json > $OUT/bench-$k-$r.log 2>&1
    echo "round $r $k: $(grep -E 'D64 float16' $OUT/bench-$k-$r.log | sed 's/; baseline.*//' | tr '\n' ' ')"
  done
done; ts "bench"
GPUATTN_KERNEL=sm90_ws_128x128 timeout 300 $B/tools/gpuattn verify --device cuda --json $OUT/verify-128x128.json > $OUT/verify-128x128.log 2>&1; ts "verify rc=$?"
tail -2 $OUT/verify-128x128.log
cd $OUT && tar czf all.tgz bench-* && rm -f bench-*
