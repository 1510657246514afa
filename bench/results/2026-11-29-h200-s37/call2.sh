#!/usr/bin/env bash
# Written at the end of s36 (not run yet): branch wip/s37-kernels against main, same run. Changes
# to src/engine/cuda/{skinny.cu,skinny.h,cuda_ops.cpp} and src/cuda/ptx.cuh, only built on the
# host:
# 1. the int8 kernel stages its weights in shared memory by cp.async at every row count,
#    predicated on the chunk: all 8 loads ahead of the PDL wait in the sm_90a SASS at 1-8 rows
#    (0-1 of 8 at 8 rows before); the upload's 3 KB tail goes;
# 2. dequant_q8 (steps of 9+ rows) in 128 x 128 units, 4 loads a lane in flight;
# 3. GPUATTN_SKINNY_Q8_CHUNK=128 (experiment switch): 128-row chunks, twice the CTAs (1.5B's
#    K 1600 then takes 13 splits: the workspace reduction, not clusters). b128 below;
# 4. GPUATTN_SKINNY_Q8_TWO_LAUNCHES=1 (experiment switch): int8 steps of 9-16 rows as two
#    launches of the kernel instead of dequantize + cuBLASLt. b2 below (B16).
# Run from a checkout of wip/s37-kernels after making main's versions into an untracked overlay:
#   source scripts/gen-ab.sh; ab_overlay main bench/results/2026-11-29-h200-s36/a-src \
#     src/engine/cuda/skinny.cu src/engine/cuda/skinny.h src/engine/cuda/cuda_ops.cpp src/cuda/ptx.cuh
# (the branch's dense-kernel prefetch, src/cuda/ptx.cuh's prefetch_l2, is in b too: it does not
# touch the int8 path; next-call-s37-dense.sh times it.)
#   OUT=$OUT bash bench/results/2026-11-29-h200-s36/next-call-s37-kernels.sh
# Expect: 124M B8 int8 from ~13,600 toward dense's 18,000 (each 8-row linear's weights fetched
# under the kernel ahead, ~2-3 us a linear: 48 a step); B16 int8 from ~25,400 back to 27,400 or
# past it (the dequantize), b2 past both if two reads of the int8 W beat five bytes a weight; 1.5B
# B1 within +-2% (the 1-4-row kernels had all loads ahead already); b128 on 1.5B B1 +5-10% if the
# probe's 12% on the linears survives the workspace reduction. Engine GPU tests (int8 rows 1-9 and
# 16: 1-8 take the stage, 9 and 16 the dequantize; K 64 and 1600 end in a half unit), racecheck of
# the chained test (int8 at 6 rows), memcheck; the int8 tests again at chunk 128 and with b2's
# switch.
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
source scripts/gen-ab.sh
ab_build bench/results/2026-11-29-h200-s36/a-src 4 || exit 1; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "b engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A3 "Failure" $OUT/engine-tests.log | head -16
timeout 90 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.SkinnyLinearsChained*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.Int8LinearsMatchTheFp64Reference' > $OUT/memcheck.log 2>&1
ts "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -2
for c in 128; do  # 64 too if time allows: it runs the workspace path at K 768
  GPUATTN_SKINNY_Q8_CHUNK=$c timeout 90 $T --gtest_filter='Gpt2EngineCuda.Int8*:Gpt2EngineCuda.SkinnyLinearsChained*:Gpt2EngineCuda.AttnInput*' > $OUT/tests-chunk$c.log 2>&1
  ts "int8 tests at chunk $c rc $?"; grep -E "PASSED|FAILED" $OUT/tests-chunk$c.log | tail -3
done
GPUATTN_SKINNY_Q8_TWO_LAUNCHES=1 timeout 90 $T --gtest_filter='Gpt2EngineCuda.Int8*:Gpt2EngineCuda.AttnInput*' > $OUT/tests-two.log 2>&1
ts "int8 tests with two launches at 9-16 rows rc $?"; grep -E "PASSED|FAILED" $OUT/tests-two.log | tail -3
GPUATTN_SKINNY_Q8_CHUNK=100 /tmp/b/build/tools/gpuattn generate --random 124m --max-new 2 --linear-weights int8 2>&1 | tail -1
run() {  # label side args... (side b128 / b2: b with an experiment switch)
  local label=$1 d=$2; shift 2
  case $d in
    b128) AB_ENV="GPUATTN_SKINNY_Q8_CHUNK=128" ab_gen "$label" b "$@" --linear-weights int8 ;;
    b2) AB_ENV="GPUATTN_SKINNY_Q8_TWO_LAUNCHES=1" ab_gen "$label" b "$@" --linear-weights int8 ;;
    *) ab_gen "$label" "$d" "$@" --linear-weights int8 ;;
  esac
}
# ~21 s a run (s36 call 3): 16 runs fit the 600 s call after ~240 s of builds and tests.
for round in 1 2; do
  ds="a b b128"; [ $round = 2 ] && ds="a b"
  for d in $ds; do
    run 124m-B8 $d 124m --batch 8 --prompt-len 16 --max-new 128
    run 1558m-B1 $d 1558m --batch 1 --prompt-len 16 --max-new 32
  done
  [ $round = 1 ] && for d in a b; do run 124m-B16 $d 124m --batch 16 --prompt-len 16 --max-new 128; done
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
# s37: 1.5B B1 int8 on b under the kernel tracer, against main's trace of s37 call 1 (same script).
(cd /tmp/b && cmake --build build -j16 --target gpuattn_kernel_trace > /dev/null 2>&1)
CUDA_INJECTION64_PATH=/tmp/b/build/tools/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/b-1558.csv \
  timeout 150 /tmp/b/build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -2
python3 tools/trace_summary.py /tmp/b-1558.csv --skip-replays 1 --top 12 > $OUT/b-1558m-B1-int8.txt 2>&1; head -12 $OUT/b-1558m-B1-int8.txt
ts done
