#!/usr/bin/env bash
# Device call 6: the consumers take the CTA's first item without waiting for the producer's post
# (wip/first-direct, this tree) against main (.snap): the one-wave shape alone 7 rounds, the default
# shapes 3 rounds; then the step trace of this tree (the CTA's start: "-> first item taken").
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2 $OUT/tb
AB_SHAPES=default AB_ONLY="D64 S1024" AB_SPARSE=0 OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 7 > $OUT/s1/ab.log 2>&1; ts "ab one-wave rc=$?"
grep -E "^\| B" $OUT/s1/ab/summary.md | head -3
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s2 timeout 150 scripts/ab.sh .snap 3 > $OUT/s2/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| B" $OUT/s2/ab/summary.md | head -12
OUT=$OUT/tb timeout 120 scripts/sm90-trace.sh short-d64 > $OUT/tb/log 2>&1; ts "trace rc=$?"
grep -E "^item|^0 \||span|all 128" $OUT/tb/short-d64-summary.txt | head -6
cd $OUT && tar czf all.tgz s1 s2 tb && rm -rf s1 s2 tb
