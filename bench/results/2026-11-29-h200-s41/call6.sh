#!/usr/bin/env bash
# s41 call 6: the final int4 tree (s41g: s41f with chunks up to 16 rows) through the whole GPU
# suite; s40's review mend on top of it (s41m: page_shift / page_of, warp_slot, bias_of) through
# the decode, paged, 8-bit KV and engine suites and racecheck, and A/B against s41g.
# Expected: the mend within noise (same behaviour by construction; SASS moved).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call6.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s41g s41m; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
timeout 220 /tmp/s41g/gpuattn_cuda_tests --gtest_brief=1 > $OUT/tests-all.txt 2>&1
ts "s41g all tests rc $? $(tail -2 $OUT/tests-all.txt | tr '\n' ' ')"
T=/tmp/s41m/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='*Decode*:*Paged*:*KvCache*:*SeqUsed*:*Quantized*:Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests-mend.txt 2>&1
ts "s41m tests rc $? $(tail -2 $OUT/tests-mend.txt | tr '\n' ' ')"
small='Decode/*Sk4097*:Decode/*varlen*:Decode/*Sq4_Sk777_D256*:Decode/*B48_H12*:Decode/*Sk1000_D64*:PagedKvCuda.DecodeReadsThePagesInPlace:QuantizedKvCuda.*'
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter="$small" --gtest_brief=1 > $OUT/racecheck-mend.txt 2>&1
ts "racecheck mend rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-mend.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s41g s41m; do
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B8-int4 $v 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights int4
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-mend.txt
rm -f $OUT/gen.tmp; ts done
