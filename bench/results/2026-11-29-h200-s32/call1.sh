#!/usr/bin/env bash
# s32 call 1: the timing half of the GPU check at HEAD (named shapes, the sweep and every sweep point
# in turn; no sparse steps), then each kernel's duration in GPT-2 124M B1 generate (ncu, one metric:
# gpu__time_duration.sum; graph nodes profiled one by one), and the step's tok/s without ncu.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/check
OUT=$OUT/check GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 timeout 430 scripts/gpu-check.sh > $OUT/check-console.log 2>&1
ts "gpu-check rc $?"
tail -60 $OUT/check-console.log | grep -v "^$" | tail -45
G=build-gpu/tools/gpuattn
timeout 40 $G generate --random 124m --batch 1 --prompt-len 16 --max-new 128 --json $OUT/gen-b1.json > $OUT/gen-b1.log 2>&1
ts "generate rc $?"; tail -4 $OUT/gen-b1.log
left=$((585 - $(date +%s) + t0))
[ $left -gt 20 ] && timeout $left ncu --metrics gpu__time_duration.sum --csv --print-units base \
  $G generate --random 124m --batch 1 --prompt-len 16 --max-new 6 --warmup 0 > $OUT/ncu-b1.csv 2> $OUT/ncu-b1.err
ts "ncu rc $?"; wc -l $OUT/ncu-b1.csv
cd $OUT && tar czf check.tgz check && rm -rf check
