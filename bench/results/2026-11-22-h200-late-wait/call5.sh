#!/usr/bin/env bash
# Device call 5 (ninth session): the late wait where it paid (wip/late-wait2 42477d1, .lw) against
# main 02eafd2 (.snap): default shapes with the sparse cases, then the sweep, 3 rounds each.
set -u
export GPUATTN_COMMIT=late-wait2-42477d1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1" "$OUT/s2"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > $OUT/gpu.txt
AB_SHAPES=default AB_SPARSE=1 AB_B_DIRS=".lw" OUT=$OUT/s1 timeout 280 scripts/ab.sh .snap 3 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
(cat "$OUT/s1/ab/summary.md" 2>/dev/null || python3 bench/ab_summary.py "$OUT/s1/ab") | grep -v "^$"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".lw" OUT=$OUT/s2 timeout $((590-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
(cat "$OUT/s2/ab/summary.md" 2>/dev/null || python3 bench/ab_summary.py "$OUT/s2/ab") | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
