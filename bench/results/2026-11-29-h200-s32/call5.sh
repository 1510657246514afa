#!/usr/bin/env bash
# s32 call 5 (experiment build, not committed as such): which PDL pays in the engine, its own
# kernels' or the library decode kernel's? GPUATTN_PDL_DECODE=0 launches the decode kernel plainly
# while the engine's kernels keep PDL. GPT-2 124M B1 generate, decode PDL off / on in turn, 2 rounds;
# decode_ab.py once with the decode kernel plain.
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli _C > $OUT/build.log 2>&1; ts "build rc $?"
G=build-gpu/tools/gpuattn
for i in 1 2; do
  for d in 0 1; do
    GPUATTN_PDL_DECODE=$d timeout 30 $G generate --random 124m --batch 1 --prompt-len 16 --max-new 128 > $OUT/gen.tmp 2>&1
    echo "B1 decode-pdl=$d: $(tail -1 $OUT/gen.tmp)"
  done
done | tee $OUT/gen-ab.txt
GPUATTN_PDL_DECODE=0 PYTHONPATH=build-gpu/python timeout 40 python3 bench/results/2026-11-29-h200-s31/decode_ab.py plain > $OUT/dab-plain.log 2>&1
ts "decode_ab rc $?"; cat $OUT/dab-plain.log | head -3
rm -f $OUT/gen.tmp
