#!/usr/bin/env bash
# s39 call 5: s39d = s39c with the largest carveout asked only for the int8 linears (narrow and
# cluster kernels) and the 16-bit decode kernels, not the dense skinny kernel (call 4: 124M B1
# dense lost 5% with it, int8 gained 10%). GPUATTN_CARVEOUT_MAX=0/1 alternated, carried.
# Expected: 124M B1 dense as with 0 (+-1%); int8 as call 4's 1 (+10%); B32 (lean decode) +-2%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call5.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s39d
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
ts start
gen() { local label=$1 e=$2; shift 2
  env $e timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $e: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for e in GPUATTN_CARVEOUT_MAX=0 GPUATTN_CARVEOUT_MAX=1; do
    gen 1558m-B1-int8 $e 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8
    gen 124m-B1 $e 124m --batch 1 --prompt-len 16 --max-new 128
    gen 124m-B1-int8 $e 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
    gen 124m-B32-p512 $e 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B8-int8 $e 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights int8
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
timeout 150 /tmp/$v/gpuattn_cuda_tests --gtest_filter='*Decode*:*Gpt2EngineCuda*:*PagedKv*:*QuantizedKv*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
rm -f $OUT/gen.tmp; ts done
