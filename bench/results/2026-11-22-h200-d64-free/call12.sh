#!/usr/bin/env bash
# Device call 12: more K/V in flight at head dim 64 against main 932248b (.snap): 3 stages (.s3),
# 4 stages (.s4), and the first two K/V tiles issued before __syncthreads (.e2). Quick shapes 7
# rounds, then the sweep 2 rounds (its D64 rows).
set -u
export GPUATTN_COMMIT=tree-stages
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".s3 .s4 .e2" OUT=$OUT/s1 timeout 250 scripts/ab.sh .snap 7 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -E "^##|D64|D128"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".s3 .s4 .e2" OUT=$OUT/s2 timeout $((560-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -E "^##|D64"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
