#!/usr/bin/env bash
# Device call 5: exp turns around the exponentials only (after both rows' max; call 3's .et2),
# at head dim 64 only (wip/exp-turns, this tree), against main (.snap): the D64
# shapes of the default set 5 rounds and of the sweep 4 rounds, then verify with the time left.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_ONLY="D64" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 5 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| case\|^| head" | head -10
AB_ONLY="D64" AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 240 scripts/ab.sh .snap 4 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | grep -v "^| case" | head -24
timeout $((590-($(date +%s)-t0))) build-ab-b/tools/gpuattn verify --device cuda > $OUT/verify-b.log 2>&1; ts "verify b rc=$?"; grep -c PASS $OUT/verify-b.log; grep -v PASS $OUT/verify-b.log | tail -2
cd $OUT && tar czf all.tgz s1 s2 *.log && rm -rf s1 s2 *.log
