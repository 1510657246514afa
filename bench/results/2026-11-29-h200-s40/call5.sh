#!/usr/bin/env bash
# s40 call 5: s40-v3 (the warp's page and slot fetched a tile ahead, the page a shift for pages of
# a power of two: no division in the loop) against s40-dec2 (011dca3) in the engine, and the
# decode kernel alone (tools/decode_layout_probe.cu) against s40-probe-old (4597bd3).
# Expected: the probe at page 16 a few % below call 4's new figures (60.4 us at B128); engine B128
# +1-3% over dec2; page 64 (already whole tiles) unchanged.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call5.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s40-probe-old s40-dec2 s40-v3; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s40-v3/gpuattn_cuda_tests
ts start
timeout 200 $T --gtest_filter='*Decode*:*Paged*:*Gpt2EngineCuda*:*KvCache*:*SeqUsed*:*Quantized*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
GPUATTN_DECODE_LEAN=0 timeout 100 $T --gtest_filter='*DecodeCuda*:*PagedKvCuda*' --gtest_brief=1 > $OUT/tests-lean0.txt 2>&1
ts "tests lean=0 rc $? $(tail -2 $OUT/tests-lean0.txt | tr '\n' ' ')"
timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='PagedKvCuda.DecodeReadsThePagesInPlace' --gtest_brief=1 > $OUT/racecheck-paged.txt 2>&1
ts "racecheck paged rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-paged.txt | tail -1)"
timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter='PagedKvCuda.DecodeReadsThePagesInPlace' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
probe() { for v in s40-probe-old s40-v3; do echo "== $v [$*]"; timeout 60 /tmp/$v/gpuattn_decode_layout_probe "$@" 5 0 2>&1 | grep -v "^$"; done; }
for round in 1 2; do
  probe 128 12 64 576 16; probe 128 12 64 576 64; probe 8 12 64 4096 16; probe 1 12 64 576 16
  probe 64 16 128 1024 16
done > $OUT/probe.txt 2>&1
ts "probes done"
gen() { local label=$1 v=$2; shift 2
  timeout 120 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s40-dec2 s40-v3; do
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
    gen 124m-B32-p512 $v 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B1 $v 124m --batch 1 --prompt-len 16 --max-new 256
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
