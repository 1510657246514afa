#!/usr/bin/env bash
# Device call 8: exp turns restricted to the dense 2-consumer D64 kernel with the hoisted P V wait
# (causal calls under 2048 rows; wip/exp-turns-causal = this tree; the other instantiations' code
# only rescheduled by ptxas) against main (.snap): default 3 rounds, the sweep 3 rounds, verify.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| case\|^| head" | head -16
AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 250 scripts/ab.sh .snap 3 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | grep -v "^| case" | head -46
timeout $((590-($(date +%s)-t0))) build-ab-b/tools/gpuattn verify --device cuda > $OUT/verify-b.log 2>&1; ts "verify b rc=$?"; grep -c PASS $OUT/verify-b.log; grep -v PASS $OUT/verify-b.log | tail -2
cd $OUT && tar czf all.tgz s1 s2 *.log && rm -rf s1 s2 *.log
