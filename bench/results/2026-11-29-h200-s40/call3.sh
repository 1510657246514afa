#!/usr/bin/env bash
# s40 call 3: the decode kernel's pages a warp at a time (s40-dec2: call 2's warp-owned rows, plus
# one block-table entry a warp and tile wherever the page size is a multiple of 16: the engine's
# 16 included; before, 4 entries and a page walk a thread and tile) against s40-dec (call 2's)
# and s40-epi (4597bd3), all carried (s40-epi and s40-dec: the CLI only).
# Expected: dec2 over dec +1-4% at 124M B128 / B32 prompt 512 (the page walk was ~9% of the
# decode kernel's attributed instructions at 16-key pages, s39 ncu); B1 unchanged.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call3.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s40-epi s40-dec s40-dec2; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s40-dec2/gpuattn_cuda_tests
ts start
timeout 200 $T --gtest_filter='*Decode*:*Paged*:*Gpt2EngineCuda*:*KvCache*:*SeqUsed*:*Quantized*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
GPUATTN_DECODE_LEAN=0 timeout 100 $T --gtest_filter='*DecodeCuda*:*PagedKvCuda*' --gtest_brief=1 > $OUT/tests-lean0.txt 2>&1
ts "tests lean=0 rc $? $(tail -2 $OUT/tests-lean0.txt | tr '\n' ' ')"
small='Decode/*Sk4097*:Decode/*varlen*:Decode/*Sq4_Sk777_D256*:Decode/*B48_H12*:Decode/*Sk1000_D64*'
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter="$small" --gtest_brief=1 > $OUT/racecheck.txt 2>&1
ts "racecheck decode rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1) $(grep -c OK $OUT/racecheck.txt)"
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='PagedKvCuda.DecodeReadsThePagesInPlace' --gtest_brief=1 > $OUT/racecheck-paged.txt 2>&1
ts "racecheck paged rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-paged.txt | tail -1)"
timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter="PagedKvCuda.DecodeReadsThePagesInPlace:$small" --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 120 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s40-epi s40-dec s40-dec2; do
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B32-p512 $v 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 256
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for v in s40-epi s40-dec2; do
  gen 1558m-B1-int8 $v 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
