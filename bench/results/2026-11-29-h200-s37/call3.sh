#!/usr/bin/env bash
# s37 call 3: wip/s37-merge (wip/s37-kernels with its dequant_q8 change reverted, + wip/head-pad)
# against main, same run. a = this tree with main's 8 src files (a-src, made by ab_overlay).
# Expect: the head at Vp = 50304 leaves the sm_75 align1 kernels: 124M B128 dense +6-8% (111 us
# of a 1.31 ms step to ~20-25), B8 dense +5-8% (54 of ~430 us); B1 and 1.5B B1 (gemv2T) within
# +-2%; the s37-kernels int8 changes as call 2 (B8 int8 +2-3%, 1.5B B1 int8 0-2%); B1 dense: the
# dense kernel's L2 prefetch of later passes, unmeasured, +-3%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s37/call3.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
source scripts/gen-ab.sh
ab_build bench/results/2026-11-29-h200-s37/a-src 8 || exit 1; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "b engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A5 "Failure" $OUT/engine-tests.log | head -20
for round in 1 2; do
  for d in a b; do
    ab_gen 124m-B1-dense $d 124m --batch 1 --prompt-len 16 --max-new 128
    ab_gen 1558m-B1-int8 $d 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8
    [ $round = 2 ] && continue
    ab_gen 124m-B8-dense $d 124m --batch 8 --prompt-len 16 --max-new 128
    ab_gen 124m-B128-dense $d 124m --batch 128 --prompt-len 512 --max-new 128
    ab_gen 124m-B8-int8 $d 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights int8
    ab_gen 124m-B16-int8 $d 124m --batch 16 --prompt-len 16 --max-new 128 --linear-weights int8
  done
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
(cd /tmp/b && cmake --build build -j16 --target gpuattn_kernel_trace > /dev/null 2>&1)
CUDA_INJECTION64_PATH=/tmp/b/build/tools/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/b-128.csv \
  timeout 150 /tmp/b/build/tools/gpuattn generate --random 124m --batch 128 --prompt-len 512 --max-new 128 2>&1 | tail -2
python3 tools/trace_summary.py /tmp/b-128.csv --skip-replays 1 --top 12 > $OUT/b-124m-B128-dense.txt 2>&1; head -12 $OUT/b-124m-B128-dense.txt
ts done
