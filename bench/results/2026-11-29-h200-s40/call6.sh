#!/usr/bin/env bash
# s40 call 6: the decode kernel at 362e503 (warp-owned rows, a page entry a warp, no division)
# against torch SDPA's cuDNN and flash backends in the same run: bench/paged_decode.py (DESIGN.md's
# decode rows, ours paged at 16/64/256 and dense) and compare_torch's two decode cases. Built here.
# Expected (s31: paged 0.97-0.99x cuDNN, dense 0.99-1.00x): 1.0-1.15x, most at the long rows
# (the probe: B8 L4096 -17%, D128 L1024 -6%).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call6.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1
cmake --build $B -j16 >> $OUT/build.log 2>&1
ts "build rc $? $(ls $B/python)"
PYTHONPATH=$PWD/$B/python timeout 300 python3 bench/paged_decode.py --json $OUT/paged_decode.json --repeats 3 > $OUT/paged_decode.log 2>&1
ts "paged_decode rc $?"
PYTHONPATH=$PWD/$B/python timeout 150 python3 bench/compare_torch.py --json $OUT/compare_decode.json --repeats 3 \
  --case bfloat16,8,32,8,1,4096,128,0 --case bfloat16,2,32,8,4,4096,128,1 --case float16,128,12,12,1,576,64,0 \
  > $OUT/compare_decode.log 2>&1
ts "compare rc $?"
tail -40 $OUT/paged_decode.log; tail -12 $OUT/compare_decode.log
