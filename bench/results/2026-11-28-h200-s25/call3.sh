#!/usr/bin/env bash
# Device call 3: the timing half of the GPU check (gpuattn bench and the torch anchors, the FA3
# sweep and every sweep point timed in turn with cuDNN and FA2; no sparse steps), then the D64
# causal sweep points in turn again with 11 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/th
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 OUT=$OUT/th timeout 420 scripts/gpu-check.sh > $OUT/th/console.log 2>&1; ts "timing half rc=$?"
cases=()
for s in 512,32 1024,16; do cases+=(--case "float16,${s#*,},32,32,${s%,*},${s%,*},64,1"); done
left=$((585 - $(date +%s) + t0))
PYTHONPATH=$PWD/build-gpu/python timeout $left python3 bench/compare_torch.py --repeats 11 --json $OUT/turns.json "${cases[@]}" > $OUT/turns.log 2>&1; ts "turns rc=$?"
grep -E "^fp16|^case" $OUT/turns.log
tail -60 $OUT/th/summary.md 2>/dev/null | grep -E "^\| " | tail -45
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -mindepth 1 ! -name all.tgz -delete
