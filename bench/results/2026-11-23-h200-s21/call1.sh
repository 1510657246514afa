#!/usr/bin/env bash
# Device call 1 (twenty-first session): the softmax's row sums after every exponential of the
# tile (wip/late-sums = this tree: the MUFU.EX2 issue back to back instead of each sum's FADD
# waiting on the exponential two before it) and the same with the P V wait kept at the
# softmax's start where ptxas hoisted it before (.lw: the causal and 3-consumer D64 kernels, D256)
# against main (.snap): default shapes 3 rounds, the sweep 2 rounds, verify on both B builds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_B_DIRS=". .lw" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md | head -34
AB_B_DIRS=". .lw" AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 200 scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| |^## " $OUT/s2/ab/summary.md | head -90
timeout 60 build-ab-b1/tools/gpuattn verify --device cuda > $OUT/verify-b1.log 2>&1; ts "verify b1 rc=$?"; tail -2 $OUT/verify-b1.log
timeout 50 build-ab-b2/tools/gpuattn verify --device cuda > $OUT/verify-b2.log 2>&1; ts "verify b2 rc=$?"; tail -2 $OUT/verify-b2.log
cd $OUT && tar czf all.tgz s1 s2 *.log && rm -rf s1 s2 *.log
