#!/usr/bin/env bash
# Device call 1: the first item's lines asked of L2 at kernel entry (src/cuda/fwd_sm90.cuh,
# ptx::prefetch_l2), A/B against HEAD (.snap): side b1 is this tree (Q and the first K/V tile),
# b2 (.x) the same with the first 8 K/V tiles. Default shapes 5 rounds, then the S512 and S1024
# sweep points 3 rounds each.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv,noheader
mkdir -p $OUT/d $OUT/s512 $OUT/s1024
AB_B_DIRS=". .x" AB_SHAPES=default AB_SPARSE=0 OUT=$OUT/d timeout 330 scripts/ab.sh .snap 5 > $OUT/d/ab.log 2>&1; ts "ab default rc=$?"
python3 bench/ab_summary.py $OUT/d/ab 2>&1 | tail -40
left=$((560 - $(date +%s) + t0))
[ $left -gt 60 ] && AB_B_DIRS=". .x" AB_SHAPES=sweep AB_ONLY="S512" AB_SPARSE=0 OUT=$OUT/s512 timeout $left scripts/ab.sh .snap 3 > $OUT/s512/ab.log 2>&1; ts "ab S512 rc=$?"
python3 bench/ab_summary.py $OUT/s512/ab 2>&1 | tail -30
left=$((575 - $(date +%s) + t0))
[ $left -gt 60 ] && AB_B_DIRS=". .x" AB_SHAPES=sweep AB_ONLY="S1024" AB_SPARSE=0 OUT=$OUT/s1024 timeout $left scripts/ab.sh .snap 3 > $OUT/s1024/ab.log 2>&1; ts "ab S1024 rc=$?"
python3 bench/ab_summary.py $OUT/s1024/ab 2>&1 | tail -30
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -mindepth 1 ! -name all.tgz -delete
