#!/usr/bin/env bash
# s39 call 7: s39f = main 6a486fc (s39e) with the narrow kernel's MMA loop taking two of a warp's
# groups at a time (two independent 4-MMA chains, interleaved; sums folded in the same order, so
# the same bits), against s39e. Carried (carry ["carry"]).
# Expected: mlp proj (K 6400: 12.5 groups a warp, ~1 us of dependent MMAs) -0.3-0.5 us, the
# K 1600 linears ~0.1 us: 1.5B B1 int8 +1-3%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call7.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s39e s39f; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
timeout 100 /tmp/s39f/gpuattn_cuda_tests --gtest_filter='*Int8*:*Skinny*:*AttnInput*:*BatchedGeneration*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
timeout 60 compute-sanitizer --tool racecheck --racecheck-report hazard /tmp/s39f/gpuattn_cuda_tests --gtest_filter='*SkinnyLinearsChained*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s39e s39f; do
    gen 1558m-B1-int8 $v 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8
    gen 124m-B1-int8 $v 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
