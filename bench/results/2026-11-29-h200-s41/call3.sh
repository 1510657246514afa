#!/usr/bin/env bash
# s41 call 2: GPT-2 1.5B B1 int4 against int8 (s41a), and s40's review mend (s41m = s41a + the
# mend: page_shift / page_of, warp_slot, bias_of) checked: the decode, paged, 8-bit KV and engine
# suites, racecheck on the decode cases, and 124M B1 dense / B128 p512 A/B against s41a.
# Expected: the mend within noise everywhere (same behaviour by construction; SASS moved).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s41a s41m; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
gen() { local label=$1 v=$2; shift 2
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
ts start
for w in int8 int4 int8 int4; do
  gen "1558m-B1-$w" s41a 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights $w
done 2>&1 | tee $OUT/gen-1558m.txt
ts "1.5B done"
T=/tmp/s41m/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='*Decode*:*Paged*:*KvCache*:*SeqUsed*:*Quantized*:Gpt2EngineCuda.Skinny*:Gpt2EngineCuda.AttnInput*:Gpt2EngineCuda.Batched*' --gtest_brief=1 > $OUT/tests-mend.txt 2>&1
ts "mend tests rc $? $(tail -2 $OUT/tests-mend.txt | tr '\n' ' ')"
small='Decode/*Sk4097*:Decode/*varlen*:Decode/*Sq4_Sk777_D256*:Decode/*B48_H12*:Decode/*Sk1000_D64*:PagedKvCuda.DecodeReadsThePagesInPlace'
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter="$small" --gtest_brief=1 > $OUT/racecheck-mend.txt 2>&1
ts "racecheck mend rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-mend.txt | tail -1)"
for round in 1 2; do
  for v in s41a s41m; do
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-mend.txt
rm -f $OUT/gen.tmp; ts done
