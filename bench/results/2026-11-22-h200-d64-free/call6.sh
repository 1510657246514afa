#!/usr/bin/env bash
# Device call 6: the first loads of a B1 H16 S1024 D64 call. Diagnostic builds (GPUATTN_DIAG in
# fwd_sm90.cuh, head dim 64 only; the kernels compute nothing) against main (.snap), gpuattn bench
# quick shapes, 7 rounds (only the D64 row is meaningful):
#   .x1  every CTA returns after the barrier setup's __syncthreads (launch + prologue)
#   .x2  Q, K_0, V_0 loaded, then the consumers return
#   .x3  Q and K_0 only      .x4  Q only      .x5  Q and both stages (K_0, V_0, K_1, V_1)
set -u
export GPUATTN_COMMIT=tree-diag-loads
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".x1 .x2 .x3 .x4 .x5" OUT=$OUT/s1 timeout 500 scripts/ab.sh .snap 7 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -E "^##|D64"
cd "$OUT" && tar czf all.tgz s1 && rm -rf s1
