#!/usr/bin/env bash
# s39 call 2: the working tree (s39a: the narrow int8 kernel's weights-side reads all ahead of the
# PDL wait, x read 16 bytes a thread; the lean head-dim-64 decode kernel for one-wave grids)
# against dec-base (main before s39), both carried (carry ["carry"]; made by
# scripts/carry-build.sh from build-s38, an sm_90a build of this tree).
# Expected: 1.5B B1 int8 +8-15% (a bias and layernorm weights' HBM trip off each linear's chain,
# ~1-1.6 us of ~5); 124M B1 +3-4% and B32 +6-8% (call 1's s2m5); B128 as base (the 3-stage kernel
# kept past one wave); B64 (768 CTAs, 3-stage) as base.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in dec-base s39a; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s39a/gpuattn_cuda_tests
ts start
# Correctness first: the decode, paged, engine and int8 suites on the lean rule (auto), then the
# decode suites with the lean kernel forced off and on.
timeout 240 $T --gtest_filter='*Decode*:*Gpt2EngineCuda*:*PagedKv*:*QuantizedKv*:*SeqUsedK*' --gtest_brief=1 > $OUT/tests-auto.txt 2>&1
ts "tests auto rc $? $(tail -3 $OUT/tests-auto.txt | tr '\n' ' ')"
for f in 0 1; do
  GPUATTN_DECODE_LEAN=$f timeout 120 $T --gtest_filter='*Decode*:*PagedKv*:*SeqUsedK*:*BatchedGeneration*' --gtest_brief=1 > $OUT/tests-lean$f.txt 2>&1
  ts "tests lean=$f rc $? $(tail -3 $OUT/tests-lean$f.txt | tr '\n' ' ')"
done
# Sanitizers (no kernel filter: the filtered racecheck crashes on this device, s38).
timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='*SkinnyLinearsChained*:DecodeCuda*D64*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY|hazard' $OUT/racecheck.txt | tail -2 | tr '\n' ' ')"
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='*SkinnyLinearsChained*:DecodeCuda*D64*' > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in dec-base s39a; do
    gen 1558m-B1-int8 $v 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 128
    gen 124m-B32-p512 $v 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B64-p512 $v 124m --batch 64 --prompt-len 512 --max-new 128
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
CUDA_INJECTION64_PATH=/tmp/s39a/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/n.csv \
  timeout 120 /tmp/s39a/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -1
python3 tools/trace_summary.py /tmp/n.csv --skip-replays 1 --top 15 > $OUT/trace-1558m-B1-int8.txt 2>&1
ts "trace rc $?"; head -22 $OUT/trace-1558m-B1-int8.txt
rm -f $OUT/gen.tmp; ts done
