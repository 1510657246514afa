#!/usr/bin/env bash
# Written in s39 (not run): wip/s40-dense-epilogue (777fa23) against main (dfdfc82), both carried
# (carry ["carry"]: carry/s40-main.tar.xz = gpuattn of main, carry/s40-epi.tar.xz = gpuattn and
# gpuattn_cuda_tests of the branch, built in s39 by CARRY_BUILD_DIR=build-s38
# scripts/carry-build.sh; if carry/ is gone, rebuild them that way from the two commits).
# The change: the dense one-row kernel (skinny_kernel, GPT-2 124M B1's linears) stages its slice's
# biases by cp.async ahead of the PDL wait; the epilogue read them from HBM after it. s39 did the
# same (and more) for the int8 narrow kernel: 1.5B +4.5-7%.
# Expected: 124M B1 dense +3-8%; 124M B1 int8, B8 and 1.5B unchanged (other kernels).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/next-call-dense-epilogue.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s40-main s40-epi; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
timeout 150 /tmp/s40-epi/gpuattn_cuda_tests --gtest_filter='*Skinny*:*Gpt2EngineCuda.Forward*:*BatchedGeneration*:*AttnInput*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard /tmp/s40-epi/gpuattn_cuda_tests --gtest_filter='*SkinnyLinearsChained*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2 3; do
  for v in s40-main s40-epi; do
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 128
    gen 124m-B1-p512 $v 124m --batch 1 --prompt-len 512 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
