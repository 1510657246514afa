#!/usr/bin/env bash
# s41 call 8: the final layernorm and the output head at one row in one kernel of ours
# (layernorm_head_row, s41i), GPUATTN_HEAD_KERNEL=1 (default) against 0 (the layernorm kernel,
# then cuBLASLt's GEMV), in the same binary.
# Expected: the head reads wte at ~4 TB/s instead of cuBLASLt's ~3 (ncu, call 2: 124M's 77 MB in
# 25 us), and one launch fewer: 124M B1 +3-5%, 1.5B B1 +1.5-2.5% (1.5B int4 past 1,000 tok/s).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call8.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s41i
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
ts start
timeout 120 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
timeout 60 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.LayernormHeadAtOneRow*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 h=$2; shift 2
  GPUATTN_HEAD_KERNEL=$h timeout 100 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label head=$h: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for h in 0 1; do
    gen 124m-B1 $h 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B1-int4 $h 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4
  done
done 2>&1 | tee $OUT/gen-ab.txt
for h in 0 1 0 1; do
  gen 1558m-B1-int4 $h 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
