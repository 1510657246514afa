#!/usr/bin/env bash
# Device call 2: the step trace (scripts/sm90-trace.sh short-d64: B1 H16 S1024 D64, each step's
# phases in cycles) of main (.snap) and of the speculative softmax (.), built side by side; then
# the one-wave shape alone A/B, 7 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/ta $OUT/tb $OUT/s1
(cd .snap && OUT=$OUT/ta timeout 400 scripts/sm90-trace.sh short-d64 > $OUT/ta/log 2>&1) &
OUT=$OUT/tb timeout 400 scripts/sm90-trace.sh short-d64 > $OUT/tb/log 2>&1
wait; ts "traces"
for s in ta tb; do echo "== $s"; cat $OUT/$s/short-d64-summary.txt 2>/dev/null | head -60 || tail -5 $OUT/$s/log; done
AB_SHAPES=default AB_ONLY="D64 S1024" AB_SPARSE=0 OUT=$OUT/s1 timeout 150 scripts/ab.sh .snap 7 > $OUT/s1/ab.log 2>&1; ts "ab rc=$?"
grep -E "^\| " $OUT/s1/ab/summary.md | head -6
cd $OUT && tar czf all.tgz ta tb s1 && rm -rf ta tb s1
