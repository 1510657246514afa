#!/usr/bin/env bash
# Device call 1 (twentieth session): the speculative softmax (the exponentials of a tile start
# against the running max before the tile's own max is known; dense kernel, head dims 64 and 256)
# against main (.snap): default shapes 3 rounds, the sweep 2 rounds (D128 is the control: not
# changed), then the wgmma wait placement of both builds and verify on B.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1 $OUT/s2
AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 3 > $OUT/s1/ab.log 2>&1; ts "ab default rc=$?"
grep -E "^\| " $OUT/s1/ab/summary.md | head -14
AB_SHAPES=sweep AB_SPARSE=0 OUT=$OUT/s2 timeout 200 scripts/ab.sh .snap 2 > $OUT/s2/ab.log 2>&1; ts "ab sweep rc=$?"
grep -E "^\| " $OUT/s2/ab/summary.md | head -40
for s in a b; do echo "== sass $s"; scripts/sass-waits.sh build-ab-$s 2>&1 | grep -A6 "hdim64\|hdim256" | head -20; done
timeout 80 build-ab-b/tools/gpuattn verify --device cuda > $OUT/verify.log 2>&1; ts "verify rc=$?"; tail -2 $OUT/verify.log
cd $OUT && tar czf all.tgz s1 s2 *.log && rm -rf s1 s2 *.log
