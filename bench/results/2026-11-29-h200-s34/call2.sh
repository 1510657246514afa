#!/usr/bin/env bash
# s34 call 2: (1) bench/gemv_patterns.cu, which access pattern reads one-row linears' weights at
# HBM speed; (2) main (f57d4af's kernel) against wip/skinny-cluster in the same run, 124M B1/B4.
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvcc -O3 -arch=sm_90a -std=c++17 bench/gemv_patterns.cu -o /tmp/gemv_patterns && ts "probe built"
timeout 200 /tmp/gemv_patterns 160 > $OUT/gemv-patterns.txt 2>&1; ts "probe rc $?"
rm -rf /tmp/br && mkdir /tmp/br && git archive HEAD | tar x -C /tmp/br
(cd /tmp/br && patch -p1 -s < bench/results/2026-11-29-h200-s33/skinny-cluster.patch)
for d in . /tmp/br; do
  (cd $d && cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build-gpu -j16 --target gpuattn_cli > $OUT/build-$(basename $d).log 2>&1) &
done; wait; ts "builds done"
for round in 1 2 3; do
  for d in . /tmp/br; do
    for b in 1 4; do
      timeout 60 $d/build-gpu/tools/gpuattn generate --random 124m --batch $b --prompt-len 16 --max-new 128 > $OUT/gen.tmp 2>&1
      echo "$d B$b: $(tail -1 $OUT/gen.tmp)"
    done
  done
done 2>&1 | tee $OUT/gen-ab.txt; rm -f $OUT/gen.tmp; ts "A/B done"
