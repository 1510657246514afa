#!/usr/bin/env bash
# s42 call 7: the FP8 E4M3 KV cache (s42g, EngineOptions::kv_cache, --kv-cache e4m3) against the
# 16-bit cache, same binary. Expected: decode attention is 63-67% of a 124M B128 p512 step (s37);
# the 8-bit paged decode kernel took 0.6-0.9x the 16-bit one's time on the library's shapes
# (README): B128 p512 +20-35% (87.9K -> 105-118K tok/s); B1 slower (the one-row kernel no longer
# writes the caches: one scatter kernel a layer more).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call7.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s42g
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests G=/tmp/$v/gpuattn
ts start
timeout 150 $T --gtest_filter='Gpt2EngineCuda.E4m3*:Gpt2EngineCuda.AttnInput*:Gpt2EngineCuda.RowKernels*:Gpt2EngineCuda.BatchedGeneration*:Gpt2EngineCuda.Preemption*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
grep -B3 -A12 "Failure" $OUT/tests.txt | head -40
timeout 100 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.E4m3CacheScatter*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 kv=$2; shift 2
  timeout 100 $G generate --random "$@" --kv-cache $kv > $OUT/gen.tmp 2>&1; echo "$label kv=$kv: rc $? $(tail -1 $OUT/gen.tmp)"; }
{
for round in 1 2; do
  for kv in model e4m3; do
    gen 124m-B128-p512 $kv 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B32-p512 $kv 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B1 $kv 124m --batch 1 --prompt-len 16 --max-new 256
  done
done
} 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/*.tmp; ts done
