#!/usr/bin/env bash
# s40 call 1: the dense one-row kernel's biases staged by cp.async ahead of the PDL wait
# (s40-epi, main 6c8f851 + the placement fix) against main c71a8c0 (s40-main), both carried
# (carry ["carry"], built by CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh).
# Expected: 124M B1 dense +3-8%; 124M B1 int8 (the multi-row q8 kernel is not at one row) and
# 1.5B int8 (narrow kernel) unchanged.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call1.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s40-main s40-epi; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
ts start
timeout 200 /tmp/s40-epi/gpuattn_cuda_tests --gtest_filter='*Skinny*:*Gpt2EngineCuda.Forward*:*BatchedGeneration*:*AttnInput*:*Int8*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
timeout 90 compute-sanitizer --tool racecheck --racecheck-report hazard /tmp/s40-epi/gpuattn_cuda_tests --gtest_filter='*SkinnyLinearsChained*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
timeout 90 compute-sanitizer --tool memcheck /tmp/s40-epi/gpuattn_cuda_tests --gtest_filter='*SkinnyLinearsMatch*' > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2 3; do
  for v in s40-main s40-epi; do
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B1-p512 $v 124m --batch 1 --prompt-len 512 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for v in s40-main s40-epi; do
  gen 124m-B8 $v 124m --batch 8 --prompt-len 16 --max-new 128
  gen 124m-B1-int8 $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int8
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
