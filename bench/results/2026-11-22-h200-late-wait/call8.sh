#!/usr/bin/env bash
# Device call 8 (ninth session): tensor-map prefetch (wip/tmap-prefetch 8b82979, .pf) against main
# 1fc556e (.snap), default shapes, 5 rounds; then the clock-stamp trace of fp16 B1 H16 S1024 D64 on main.
set -u
export GPUATTN_COMMIT=tmap-prefetch-8b82979
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1" "$OUT/tr"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".pf" OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 5 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
(cat "$OUT/s1/ab/summary.md" 2>/dev/null || python3 bench/ab_summary.py "$OUT/s1/ab") | grep -v "^$"
cd .snap && OUT=$OUT/tr timeout $((560-($(date +%s)-t0))) scripts/sm90-trace.sh short-d64 > $OUT/tr/trace.log 2>&1; cd ..; ts "trace rc=$?"
tail -30 $OUT/tr/trace.log
cd "$OUT" && tar czf all.tgz s1 tr && rm -rf s1 tr
