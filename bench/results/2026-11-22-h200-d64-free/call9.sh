#!/usr/bin/env bash
# Device call 9: early first loads (eeaf289, this tree) against main cedf0d2 (.snap): default
# shapes and the sparse cases 4 rounds, then the sweep 2 rounds.
set -u
export GPUATTN_COMMIT=eeaf289
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=default AB_SPARSE=1 OUT=$OUT/s1 timeout 330 scripts/ab.sh .snap 4 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary.md 2>/dev/null | grep -v "^$" || python3 bench/ab_summary.py "$OUT/s1/ab"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout $((580-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary.md 2>/dev/null | grep -v "^$" || python3 bench/ab_summary.py "$OUT/s2/ab"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
