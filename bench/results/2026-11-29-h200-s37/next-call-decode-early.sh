#!/usr/bin/env bash
# Written in s37 (not run yet), for a checkout of wip/decode-early, against main (a: main's 5
# files as an overlay, made before the call):
#   source scripts/gen-ab.sh; ab_overlay main bench/results/2026-11-29-h200-s37/a-early \
#     include/gpuattn/attention.h src/core/fwd_params.cpp src/core/fwd_params.h \
#     src/cuda/fwd_decode.cuh src/engine/gpt2_engine.cpp
# AttentionArgs::pdl_cache_ready: the decode kernel issues its first tiles' older keys before
# its PDL wait (the newest key and Q after). Expect: the decode kernel's increment at 1.5B B1
# (4.5-4.9 us x 48 a step, s37 call 1, ~48 keys: one tile) down ~1 us (the tile's DRAM latency
# under the kernel ahead): 1.5B B1 int8 +3-5%; 124M B1 +2-5% (12 a step); B128 +-1 (long kernels).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/next-call-decode-early.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
source scripts/gen-ab.sh
ab_build bench/results/2026-11-29-h200-s37/a-early 5 || exit 1; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='AttentionCudaTest.Decode*:*DecodeCuda*:*Paged*:Gpt2EngineCuda.*' > $OUT/tests.log 2>&1
ts "b tests rc $?"; grep -E "^\[ +(FAILED) |PASSED|FAILED|tests ran" $OUT/tests.log | tail -6; grep -A5 "Failure" $OUT/tests.log | head -20
timeout 90 compute-sanitizer --tool racecheck $T --gtest_filter='AttentionCudaTest.DecodeReadsReadyKeys*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
for round in 1 2 3; do
  for d in a b; do
    ab_gen 1558m-B1-int8 $d 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8
    ab_gen 124m-B1 $d 124m --batch 1 --prompt-len 16 --max-new 128
    [ $round = 1 ] && ab_gen 124m-B1-p512 $d 124m --batch 1 --prompt-len 512 --max-new 128
    [ $round = 1 ] && ab_gen 124m-B128 $d 124m --batch 128 --prompt-len 512 --max-new 128
  done
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
