#!/usr/bin/env bash
# Written in s37 (not run yet), for a checkout of wip/q8-narrow: GPUATTN_SKINNY_Q8_NARROW=1 (the
# int8 linears of one row as a CTA a 16-column tile over the whole of K, weights and scales staged
# by cp.async ahead of the PDL wait, no cluster, no workspace) against the same build without it.
# Expect: 1.5B B1 int8 from ~600 tok/s to 700+ if the ~5 us each linear adds beyond its bytes
# (s37 call 1/2 traces) is mostly the clusters' launch and sync; the trace's skinny increments
# (attn proj 5.6 us, fc 7.3) down to ~2.5-4 us. Risk: mlp proj's CTAs (K 6400: 122 KB of shared
# memory each) cannot be resident beside the kernel ahead, so they fetch W only after it ends.
# Tests first (the int8 engine tests with the switch on, memcheck and racecheck).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/next-call-q8-narrow.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
rm -rf /tmp/t && mkdir /tmp/t && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/t && cd /tmp/t
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build build -j16 --target gpuattn_cli gpuattn_cuda_tests gpuattn_kernel_trace > $OUT/build.log 2>&1; ts "build rc $?"
T=build/tests/gpuattn_cuda_tests G=build/tools/gpuattn
F='Gpt2EngineCuda.Int8*:Gpt2EngineCuda.AttnInput*:Gpt2EngineCuda.SkinnyLinears*:Gpt2EngineCuda.BatchedGeneration*:Gpt2EngineCuda.Forward*'
GPUATTN_SKINNY_Q8_NARROW=1 timeout 150 $T --gtest_filter="$F" > $OUT/tests-narrow.log 2>&1; ts "tests (narrow) rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/tests-narrow.log; grep -A5 "Failure" $OUT/tests-narrow.log | head -20
GPUATTN_SKINNY_Q8_NARROW=1 timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.Int8LinearsMatchTheFp64Reference' > $OUT/memcheck.log 2>&1
ts "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -2
GPUATTN_SKINNY_Q8_NARROW=1 timeout 90 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.Int8LinearsMatchTheFp64Reference' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
gen() { local label=$1 env=$2; shift 2
  env $env timeout 150 $G generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label [$env]: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2 3; do
  for e in GPUATTN_SKINNY_Q8_NARROW=0 GPUATTN_SKINNY_Q8_NARROW=1; do
    gen 1558m-B1-int8 $e 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8
    gen 124m-B1-int8 $e 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
  done
done 2>&1 | tee $OUT/gen-ab.txt
ts "generate A/B done"
GPUATTN_SKINNY_Q8_NARROW=1 CUDA_INJECTION64_PATH=$PWD/build/tools/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/n.csv \
  timeout 150 $G generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -1
python3 tools/trace_summary.py /tmp/n.csv --skip-replays 1 --top 12 > $OUT/narrow-1558m-B1-int8.txt 2>&1; head -12 $OUT/narrow-1558m-B1-int8.txt
ts done
