#!/usr/bin/env bash
# Device call 4: does loading the next item's Q early rescue call 1's chains? A = main before the
# chains (.snap, 323f967); .v1 = call 1's chains (0454206) with the producer posting each next
# item (and loading its Q) after the current item's second tile; .c1 = call 1's tree again.
# The sweep and the default shapes, 2 rounds each.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_B_DIRS=".v1 .c1" AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 400 scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | grep -v "^| case" | head -100
left=$((585 - $(date +%s) + t0))
AB_B_DIRS=".v1 .c1" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout $left scripts/ab.sh .snap 2 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| head\|^| case" | head -40
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1 s2
