#!/usr/bin/env bash
# Device call 3: the consumers take turns for each tile's softmax (wip/exp-turns = this tree: the
# turn around the whole softmax; .et2: only around the exponentials and row sums, after both
# rows' max) on top of the GEMM turns, against main (.snap): default 3 rounds, the sweep 2
# rounds, verify on this tree.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_B_DIRS=". .et2" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | grep -v "^| case\|^| head" | head -34
AB_B_DIRS=". .et2" AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 200 scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | grep -v "^| case" | head -90
timeout $((590-($(date +%s)-t0))) build-ab-b1/tools/gpuattn verify --device cuda > $OUT/verify-b1.log 2>&1; ts "verify b1 rc=$?"; grep -c PASS $OUT/verify-b1.log; grep -v PASS $OUT/verify-b1.log | tail -3
cd $OUT && tar czf all.tgz s1 s2 *.log && rm -rf s1 s2 *.log
