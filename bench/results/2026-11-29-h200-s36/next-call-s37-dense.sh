#!/usr/bin/env bash
# Written at the end of s36 (not run yet): branch wip/s37-kernels' dense one-row kernel against
# main's, same run. The branch prefetches each CTA's later passes into L2 ahead of the PDL wait, and
# at 4-8 rows the first pass too (ptxas sinks 11-13 of the 16 register loads below the wait there:
# scripts/pdl-loads.sh). The kernel takes every 1-8-row linear with GPUATTN_SKINNY_GEMM=all; the
# policy gives it only 124M's one-row linears (it lost 12% at B4 and 31% at B8 to cuBLASLt, s34).
# Run from a checkout of wip/s37-kernels with main's files in the overlay next-call-s37-kernels.sh
# describes (the same four files; make it once for both calls).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s36/next-call-s37-dense.sh
# Expect: 124M B1 dense (policy) unchanged or +1-3% (its chunks are one pass: nothing to
# prefetch); with =all, B4 and B8 up by the serial weight fetches the prefetch removes (~2-3 us a
# linear, 48 a step), toward or past cuBLASLt's (policy) rate printed beside; 1.5B B1 =all (K*N
# above the policy's limit: multi-pass chunks) up 3-8%.
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
source scripts/gen-ab.sh
ab_build bench/results/2026-11-29-h200-s36/a-src 4 || exit 1; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='Gpt2EngineCuda.Skinny*:Gpt2EngineCuda.Forward*:Gpt2EngineCuda.AttnInput*' > $OUT/tests.log 2>&1; ts "b dense tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/tests.log
run() {  # label side policy args...
  local label=$1 d=$2 pol=$3; shift 3
  AB_ENV="GPUATTN_SKINNY_GEMM=$pol" ab_gen "$label" "$d" "$@"
}
for round in 1 2; do
  for d in a b; do
    run 124m-B1 $d 1 124m --batch 1 --prompt-len 16 --max-new 128
    run 124m-B4 $d all 124m --batch 4 --prompt-len 16 --max-new 128
    run 124m-B8 $d all 124m --batch 8 --prompt-len 16 --max-new 128
  done
done 2>&1 | tee $OUT/gen-ab.txt
for d in a b; do run 1558m-B1 $d all 1558m --batch 1 --prompt-len 16 --max-new 32; done 2>&1 | tee -a $OUT/gen-ab.txt
run 124m-B4 b 1 124m --batch 4 --prompt-len 16 --max-new 128 | tee -a $OUT/gen-ab.txt
run 124m-B8 b 1 124m --batch 8 --prompt-len 16 --max-new 128 | tee -a $OUT/gen-ab.txt
run 1558m-B1 b 1 1558m --batch 1 --prompt-len 16 --max-new 32 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
