#!/usr/bin/env bash
# Device call 4: the trace build again with print_sm90_trace local to each file (call 3's trace
# printed zeros for the D64 kernels: one weak printer read one file's stamp array), at the short
# D64 shapes and causal-short; then ncu's pipes of ours vs cuDNN at B16 H16 S1024 D128 causal (the
# named shape closest to its 1.05x goal).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
OUT=$OUT/trace timeout 300 scripts/sm90-trace.sh causal-d64-512 short-d64 causal-short > $OUT/trace.log 2>&1
ts "trace rc=$?"; grep -E "^==|median" $OUT/trace.log
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 200 cmake --build build-gpu -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
OUT=$OUT/ncu timeout $((580 - $(date +%s) + t0)) scripts/ncu-pipes.sh causal-short > $OUT/ncu-pipes.log 2>&1
ts "ncu rc=$?"; grep -E "^==|^\|" $OUT/ncu-pipes.log
cd $OUT && tar czf trace-ncu.tgz trace ncu/*.md ncu/*-raw.csv 2>/dev/null; rm -rf trace ncu
