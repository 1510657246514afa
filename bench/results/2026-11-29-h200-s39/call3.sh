#!/usr/bin/env bash
# s39 call 3: s39b = call 2's tree with the decode kernels' launch bounds mended (decode_kernel as
# before, decode_kernel_lean with (128, 5): call 2's one kernel with (128, 1) had cost the
# head-dim-128 kernels 7 registers and a resident CTA, and the PDL overlap test failed at head dim
# 128) + the next linear's weights asked of L2 ahead of each one-row linear's wait
# (ModelOps::prefetch_weights; GPUATTN_PREFETCH_NEXT=0 turns it off). Against dec-base (main
# before s39). Carried: carry ["carry"].
# Expected: the overlap test passes again; 1.5B B1 int8 with the hint +15-30% over without (c_fc
# and c_attn were fetch-bound: 8.8-8.9 us after the kernel ahead, against 3.4 for the others);
# 124M B1 (dense skinny kernel) +3-8%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call3.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in dec-base s39b; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s39b/gpuattn_cuda_tests
ts start
timeout 200 $T --gtest_filter='*Decode*:*Gpt2EngineCuda*:*PagedKv*:*QuantizedKv*:*SeqUsedK*' --gtest_brief=1 > $OUT/tests-auto.txt 2>&1
ts "tests auto rc $? $(tail -3 $OUT/tests-auto.txt | tr '\n' ' ')"
GPUATTN_DECODE_LEAN=0 timeout 100 $T --gtest_filter='*Decode*:*PagedKv*:*SeqUsedK*' --gtest_brief=1 > $OUT/tests-lean0.txt 2>&1
ts "tests lean=0 rc $? $(tail -3 $OUT/tests-lean0.txt | tr '\n' ' ')"
GPUATTN_PREFETCH_NEXT=0 timeout 100 $T --gtest_filter='*BatchedGeneration*:*Int8Linears*' --gtest_brief=1 > $OUT/tests-noprefetch.txt 2>&1
ts "tests no prefetch rc $? $(tail -3 $OUT/tests-noprefetch.txt | tr '\n' ' ')"
timeout 150 compute-sanitizer --tool racecheck --racecheck-report hazard $T --gtest_filter='*SkinnyLinearsChained*:*PrefetchHint*:DecodeCuda*D64*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='*SkinnyLinearsChained*:*PrefetchHint*:DecodeCuda*D64*' > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 v=$2 e=$3; shift 3
  env $e timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v $e: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for ve in "dec-base X=1" "s39b GPUATTN_PREFETCH_NEXT=0" "s39b GPUATTN_PREFETCH_NEXT=1"; do
    set -- $ve
    gen 1558m-B1-int8 $1 $2 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8
    gen 124m-B1 $1 $2 124m --batch 1 --prompt-len 16 --max-new 128
    gen 124m-B1-int8 $1 $2 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for e in 0 1; do
  GPUATTN_PREFETCH_NEXT=$e CUDA_INJECTION64_PATH=/tmp/s39b/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/n$e.csv \
    timeout 120 /tmp/s39b/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -1
  python3 tools/trace_summary.py /tmp/n$e.csv --skip-replays 1 --top 12 > $OUT/trace-1558m-B1-int8-prefetch$e.txt 2>&1
  ts "trace prefetch=$e rc $?"; head -16 $OUT/trace-1558m-B1-int8-prefetch$e.txt
done
rm -f $OUT/gen.tmp; ts done
