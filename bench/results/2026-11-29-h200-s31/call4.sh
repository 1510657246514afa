#!/usr/bin/env bash
# Device call 4: the correctness half of the GPU check at 70bd313 (counters kept per stream), then
# compare_torch in turn (cuDNN, FA2, ours; host check) on the sweep points nearest 1.05x cuDNN
# (5 rounds) and on three small decode shapes (3 rounds).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/ch
GPU_CHECK_BENCH=0 OUT=$OUT/ch timeout 420 scripts/gpu-check.sh > $OUT/ch/console.log 2>&1; ts "correctness half rc=$?"
grep -E "tests passed|tests failed|all passed|FAILED|Failed  " $OUT/ch/console.log | head -8
mkdir -p /tmp/sl && tar xzf $OUT/ch/logs.tar.gz -C /tmp/sl 2>/dev/null
grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" /tmp/sl/memcheck-*.log /tmp/sl/racecheck-*.log | sort | uniq -c
C=(--case float16,32,32,32,512,512,64,1 --case float16,16,32,32,1024,1024,64,1
   --case float16,16,16,16,1024,1024,128,0 --case float16,8,16,16,2048,2048,128,0
   --case float16,32,8,8,512,512,256,0 --case float16,32,8,8,512,512,256,1)
left=$((575 - $(date +%s) + t0))
[ $left -gt 60 ] && PYTHONPATH=$PWD/build-gpu/python timeout $left python3 bench/compare_torch.py --repeats 5 "${C[@]}" --json $OUT/turns.json > $OUT/turns.log 2>&1; ts "turns rc=$?"
grep -E "^(fp16|bf16)|host-bound|HOST|WARN" $OUT/turns.log | cut -c1-150
D=(--case bfloat16,1,32,8,1,4096,128,0 --case float16,4,32,8,1,1024,128,0 --case float16,4,16,1,1,8192,64,0)
left=$((585 - $(date +%s) + t0))
[ $left -gt 30 ] && PYTHONPATH=$PWD/build-gpu/python timeout $left python3 bench/compare_torch.py --repeats 3 "${D[@]}" --json $OUT/decode.json > $OUT/decode.log 2>&1; ts "decode rc=$?"
grep -E "^(fp16|bf16)|host-bound|HOST|WARN" $OUT/decode.log | cut -c1-150
cd $OUT && tar czf /tmp/all.tgz . && mv /tmp/all.tgz . && find . -mindepth 1 ! -name all.tgz -delete
