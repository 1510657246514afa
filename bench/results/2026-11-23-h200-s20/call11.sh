#!/usr/bin/env bash
# Device call 11: the two consumers staggered on the CTA's first item (wip/stagger: consumer 0
# hands the turn over after its first softmax instead of after its first GEMM issue, so the two
# warpgroups' exponential runs fall about a softmax apart) against main (.snap): the one-wave
# shape 7 rounds, default 3 rounds, the sweep's D64 shapes 2 rounds; the step trace of this tree.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2 $OUT/s3 $OUT/tb
AB_SHAPES=default AB_ONLY="D64 S1024" AB_SPARSE=0 OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 7 > $OUT/s1/ab.log 2>&1; ts "ab one-wave rc=$?"
grep -E "^\| B" $OUT/s1/ab/summary.md | head -3
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s2 timeout 120 scripts/ab.sh .snap 3 > $OUT/s2/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| B" $OUT/s2/ab/summary.md | head -12
AB_SHAPES=sweep AB_ONLY="D64" AB_SPARSE=0 OUT=$OUT/s3 timeout 120 scripts/ab.sh .snap 2 > $OUT/s3/ab.log 2>&1; ts "ab sweep D64 rc=$?"
grep -E "^\| B" $OUT/s3/ab/summary.md | head -14
OUT=$OUT/tb timeout 100 scripts/sm90-trace.sh short-d64 > $OUT/tb/log 2>&1; ts "trace rc=$?"
grep -E "median cycles|span|all 128" $OUT/tb/short-d64-summary.txt
cd $OUT && tar czf all.tgz s1 s2 s3 tb && rm -rf s1 s2 s3 tb
