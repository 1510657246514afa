#!/usr/bin/env bash
# s41 call 1: weight-only int4 linears (q4_kernel at 1-8 rows, dequant_q4 + cuBLASLt above), built
# on the CPU machine for sm_90a and carried (carry/s41a.tar.xz).
# Checks: the engine's CUDA suite (int4 kernel and dequantized path against fp64, the engine on
# int4 against the reference of the model it runs, attn_input's fused scatter), memcheck and
# racecheck on the int4 cases.
# Expected: 1.5B B1 int4 +12-18% over int8 (a layer's linears read 4.5 bits a weight against 8.5:
# ~3.4 of the ~21.5 us a layer, if the bytes after the PDL wait were the cost); 124M B1 +3-8%;
# 124M B8 int4 against int8's cluster kernel: unknown (one CTA a 16-column tile over all of K).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call1.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s41a
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
ts start
timeout 240 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.AttnInputScattersAsTheUnfusedOps' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='Gpt2EngineCuda.AttnInputScattersAsTheUnfusedOps' --gtest_brief=1 > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
gen() { local label=$1; shift
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for w in int8 int4; do
    gen "124m-B1-$w" 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights $w
    gen "124m-B8-$w" 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights $w
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
