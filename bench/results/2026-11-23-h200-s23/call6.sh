#!/usr/bin/env bash
# Device call 6: the causal tail order from 4 row blocks a head (this tree: kCausalTailMinBlocks
# 4, so S512 and S1024 too) against 1f8b676 (.snap: from 16). The sweep's causal points, 5 rounds
# (S2048 and up unchanged: controls).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/s1
AB_SHAPES=sweep AB_ONLY="causal" AB_SPARSE=0 OUT=$OUT/s1 timeout 400 scripts/ab.sh .snap 5 > $OUT/s1/ab.log 2>&1; ts "ab causal sweep rc=$?"
grep -E "^\| |^## " $OUT/s1/ab/summary.md 2>/dev/null | grep -v "^| case\|^| head" | head -24
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -maxdepth 1 -type f ! -name all.tgz -delete && rm -rf s1
