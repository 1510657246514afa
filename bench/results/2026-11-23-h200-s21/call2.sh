#!/usr/bin/env bash
# Device call 2: tools/mufu_probe.cu, the softmax exponentials' issue rate per warp alone, with a
# second warp of exponentials on each sub-partition, and beside wgmma groups of the kernel's
# shapes (register-sourced P V, smem-sourced S); two pass counts.
# (Run twice: the first version's neighbour polled a flag whose store ptxas had hoisted above the
# stream, and ran no group; call2/ holds the second run, with fixed counts.)
set -u
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvcc -std=c++17 -O3 -arch=sm_90a -Isrc -Iinclude -o /tmp/mufu_probe tools/mufu_probe.cu 2>&1 | grep -v C7519; ts "built"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv
/tmp/mufu_probe 2000 | tee $OUT/probe-2000.md; ts "2000"
/tmp/mufu_probe 20000 | tee $OUT/probe-20000.md; ts "20000"
