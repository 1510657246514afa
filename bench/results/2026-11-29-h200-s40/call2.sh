#!/usr/bin/env bash
# s40 call 2: the split-KV decode kernel with each warp loading the K/V rows it reads, so a tile
# needs only __syncwarp (the CTA barrier once, for Q, and once before the merge): s40-dec against
# s40-epi (main 4597bd3, call 1's binaries), both carried.
# Expected: decode kernel at 124M B128 (1,536 CTAs, ~3 waves, issue/latency bound, 2 bar.sync a
# tile) a few % faster: B128 prompt 512 +2-6%; B32 +0-4%; B1 unchanged (12 CTAs).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s40-epi s40-dec; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s40-dec/gpuattn_cuda_tests
ts start
timeout 240 $T --gtest_filter='*Decode*:*Paged*:*Gpt2EngineCuda*:*KvCache*:*Seqused*:*Quantized*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
GPUATTN_DECODE_LEAN=0 timeout 120 $T --gtest_filter='*Decode*:*Paged*' --gtest_brief=1 > $OUT/tests-lean0.txt 2>&1
ts "tests lean=0 rc $? $(tail -2 $OUT/tests-lean0.txt | tr '\n' ' ')"
timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='*DecodeCuda*:*PagedKvCuda*:*DecodeReads*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 120 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s40-epi s40-dec; do
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B32-p512 $v 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 256
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for v in s40-epi s40-dec; do
  gen 124m-B8 $v 124m --batch 8 --prompt-len 16 --max-new 128
  gen 1.5b-B1-int8 $v 1.5b --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
