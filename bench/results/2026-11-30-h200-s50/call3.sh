#!/usr/bin/env bash
# Session 50, call 3 (s49 next-call-fp8-anchors.sh, D128 left out: its anchors are s44 call 7): the FP8 kernel against cuDNN and our bf16 kernel at head dims 64,
# 128 and 256 in one run (the Python module built there), after the correctness half of
# scripts/gpu-check.sh (which now runs the memcheck-fp8 / racecheck-fp8 steps and the fp8deq.
# ctest copy, neither yet run on a GPU). Head dims 256 and 64 on every shape, 128 on the named
# ones (its sweep: s44 call 7); about 8 minutes of device time, so split it where it runs long.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s49/next-call-fp8-anchors.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
B=/tmp/build-py
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > /tmp/build.txt 2>&1 &&
  cmake --build $B --target _C -j16 >> /tmp/build.txt 2>&1 || { tail -30 /tmp/build.txt; exit 1; }
for d in 256 64; do
  quick=; [ $d = 128 ] && quick=--quick
  PYTHONPATH=$B/python timeout 170 python3 bench/fp8_attention.py --head-dim $d --repeats 3 $quick \
    --json $OUT/fp8-d$d.json > $OUT/bench-d$d.txt 2>&1
  echo "bench d$d rc $?"; grep -v -i warn $OUT/bench-d$d.txt | tail -17
done
