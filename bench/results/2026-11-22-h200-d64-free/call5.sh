#!/usr/bin/env bash
# Device call 5: where the fixed part of a B1 H16 S1024 D64 call goes. Two diagnostic builds of the
# dense kernel against main (.snap), gpuattn bench quick shapes (only the D64 row is meaningful:
# the diagnostic kernels compute nothing), 7 rounds:
#   .x1  every CTA returns right after the barrier setup's __syncthreads (launch + prologue);
#   .x2  the producer loads Q, K_0 and V_0 only, the consumers return once they have landed.
set -u
export GPUATTN_COMMIT=tree-diag-exit
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvcc -O2 -arch=sm_90a tools/launch_floor.cu -o /tmp/floor && /tmp/floor 300 | tee $OUT/floor.md; ts "floor"
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".x1 .x2" OUT=$OUT/s1 timeout 400 scripts/ab.sh .snap 7 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
/tmp/floor 300 | tee $OUT/floor-after.md; ts "floor again"
cd "$OUT" && tar czf all.tgz s1 && rm -rf s1
