#!/usr/bin/env bash
# Device call 3: the tile step's K_{j+1} and V_j full barriers checked at once (mbarrier_wait2,
# wip/wait2 = this tree) and the same on the speculative softmax (wip/spec-wait2, .sw), against
# main (.snap): default shapes 3 rounds, the sweep 2 rounds; then the step trace of wip/wait2.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2 $OUT/tb
AB_B_DIRS=". .sw" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 260 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | head -34
AB_B_DIRS=". .sw" AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 230 scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| head|^\| [0-9]|^## " $OUT/s2/ab/summary.md | head -20
OUT=$OUT/tb timeout 90 scripts/sm90-trace.sh short-d64 > $OUT/tb/log 2>&1; ts "trace rc=$?"
grep -E "median cycles|span|all 128" $OUT/tb/short-d64-summary.txt
cd $OUT && tar czf all.tgz s1 s2 tb && rm -rf s1 s2 tb
