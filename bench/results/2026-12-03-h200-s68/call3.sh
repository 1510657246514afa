#!/usr/bin/env bash
# Session 68, call 3: why paged leftpad decode calls still take 1.02-1.06x the plain paged time
# (call 2): the same calls with pads on multiples of 16 (one table entry a warp and tile, the
# plain call's path) against pads anywhere (two), and a dense cache, on this tree's module.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s68/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/build.log 2>&1 && cmake --build build-gpu -j16 --target _C >> /tmp/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
export PYTHONPATH=$PWD/build-gpu/python:$PWD/bench
for args in "--page 16 --pad-multiple 16" "--page 16" "--page 256 --pad-multiple 16" "--page 256" ""; do
  name=$(echo "x $args" | tr -d ' -')
  timeout 100 python3 bench/leftpad_decode.py $args --repeats 3 --json $OUT/$name.json \
    --md $OUT/$name.md > /tmp/$name.log 2>&1
  echo "bench $args rc $?"; grep -E "u \|" $OUT/$name.md 2>/dev/null | grep -v Sq256 || tail -3 /tmp/$name.log
done
echo "done after $(( $(date +%s) - start )) s"
