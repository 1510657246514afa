#!/usr/bin/env bash
# s42 call 8 (s42h): the one-row kernels write the e4m3 cache themselves (SkinnyArgs::kv_e4m3; the
# quantizing scatter no longer needed where they take c_attn), and the whole engine CUDA suite on
# the final tree. Expected: 124M B1 e4m3 back from call 7's 0.87x toward the 16-bit cache's rate
# (one kernel a layer fewer: ~12 x 2 us of ~330 us); B128 p512 e4m3 as call 7 (101.6K).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call8.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s42h
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests G=/tmp/$v/gpuattn
ts start
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
grep -B3 -A12 "Failure" $OUT/tests.txt | head -40
timeout 100 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.E4m3CacheScatter*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 kv=$2; shift 2
  timeout 100 $G generate --random "$@" --kv-cache $kv > $OUT/gen.tmp 2>&1; echo "$label kv=$kv: rc $? $(tail -1 $OUT/gen.tmp)"; }
{
for round in 1 2; do
  for kv in model e4m3; do
    gen 124m-B1 $kv 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B1-int4-int4head $kv 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4 --head-weights int4
  done
  gen 124m-B128-p512 e4m3 124m --batch 128 --prompt-len 512 --max-new 128
done
gen 1558m-B1-int4-int4head model 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4
} 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/*.tmp; ts done
