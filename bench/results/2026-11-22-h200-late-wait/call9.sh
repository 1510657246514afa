#!/usr/bin/env bash
# Device call 9 (ninth session): tensor-map prefetch + 4-way row max / sum (wip/tmap-prefetch 188dc43, .pf) against main
# 1fc556e (.snap), default shapes, 5 rounds; then the sweep, 3 rounds.
set -u
export GPUATTN_COMMIT=tree-188dc43
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".pf" OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 5 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
(cat "$OUT/s1/ab/summary.md" 2>/dev/null || python3 bench/ab_summary.py "$OUT/s1/ab") | grep -v "^$"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".pf" OUT=$OUT/s2 timeout $((560-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
(cat "$OUT/s2/ab/summary.md" 2>/dev/null || python3 bench/ab_summary.py "$OUT/s2/ab") | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
