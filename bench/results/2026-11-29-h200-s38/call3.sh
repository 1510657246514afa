#!/usr/bin/env bash
# s38 call 3: the carried binaries of call 2 again (a = wip/s38, b = a with DecodePlan::stages(64)
# = 3). Call 2 had b's B128 +4.4% (page size 16) and +6.2% (64) in one round, and its tests did
# not run; racecheck of q8_narrow_kernel (kns filter) ended in "Internal Sanitizer Error: failed
# to handle a hardware exception" where memcheck (call 1) was clean; is it the kernel, cp.async
# tracking, or the sanitizer with any kernel that stages before its PDL wait?
#   OUT=$OUT bash bench/results/2026-11-29-h200-s38/call3.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
A=/tmp/ca B=/tmp/cb
for d in a b; do rm -rf /tmp/c$d && mkdir -p /tmp/c$d && tar xJf carry/$d.tar.xz -C /tmp/c$d --strip-components 1; done
ts start
# 1. b's tests (stages 3 at head dim 64).
timeout 120 $B/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*:AttentionCudaTest.Decode*:*DecodeCuda*:*Paged*' > $OUT/tests-b.log 2>&1
ts "tests b rc $?"; grep -E "^\[ +FAILED |PASSED|FAILED" $OUT/tests-b.log | tail -6; grep -A5 "Failure" $OUT/tests-b.log | head -20
# 2. The sanitizers on the int8 kernels, filtered to them.
T=Gpt2EngineCuda.Int8LinearsMatchTheFp64Reference
san() { local name=$1; shift; timeout 60 compute-sanitizer "$@" $A/gpuattn_cuda_tests --gtest_filter=$T > $OUT/san-$name.log 2>&1
  echo "$name rc $?: $(grep -E "SUMMARY|Internal" $OUT/san-$name.log | tr '\n' ' ')"; }
san race-narrow --tool racecheck --kernel-name kns=q8_narrow
san race-narrow-noasync --tool racecheck --racecheck-memcpy-async no --kernel-name kns=q8_narrow
GPUATTN_SKINNY_Q8_NARROW=0 san race-cluster --tool racecheck --kernel-name kns=skinny_kernel
san mem-narrow --tool memcheck --kernel-name kns=q8_narrow
san sync-narrow --tool synccheck --kernel-name kns=q8_narrow
grep -B2 -A12 "Internal\|Error" $OUT/san-race-narrow.log | head -40
ts "sanitizers"
# 3. racecheck of the decode kernel with the engine's early start (the kernel's own test cannot
# run under a sanitizer: it needs the calls to overlap).
timeout 90 compute-sanitizer --tool racecheck --kernel-name kns=decode_kernel $A/gpuattn_cuda_tests \
  --gtest_filter='Gpt2EngineCuda.BatchedGenerationFollowsTheModel' > $OUT/race-decode.log 2>&1
ts "racecheck decode rc $?: $(grep -E "SUMMARY|Internal|PASSED|FAILED" $OUT/race-decode.log | tr '\n' ' ')"
# 4. B128 (and B1) a/b, alternated.
gen() { local label=$1 bin=$2; shift 2
  timeout 60 $bin/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $bin: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for bin in $A $B; do
    gen 124m-B128-p512 $bin 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B128-p512-ps64 $bin 124m --batch 128 --prompt-len 512 --max-new 128 --page-size 64
    gen 124m-B32-p512 $bin 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B1 $bin 124m --batch 1 --prompt-len 16 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
# 5. The page layout probe (never run yet): token-major against head-major, pool in order/shuffled.
for sh in 0 1; do echo "== shuffle $sh"; timeout 30 $A/gpuattn_decode_layout_probe 128 12 64 576 16 3 $sh; done > $OUT/layout.txt 2>&1
ts "layout rc $?"; tail -8 $OUT/layout.txt
rm -f $OUT/gen.tmp; ts done
