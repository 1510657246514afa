#!/usr/bin/env bash
# Device call 6: tools/mufu_probe.cu with three more neighbours: quad maxes (SHFL), dependent
# shared-memory loads (LDS) and warp REDUX max, alone and beside the exponentials.
set -u
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvcc -std=c++17 -O3 -arch=sm_90a -Isrc -Iinclude -o /tmp/mufu_probe tools/mufu_probe.cu 2>&1 | grep -v C7519; ts "built"
/tmp/mufu_probe 2000 | tee $OUT/probe-2000.md; ts "2000"
/tmp/mufu_probe 8000 | tee $OUT/probe-8000.md; ts "8000"
