#!/usr/bin/env bash
# s39 call 4: s39c = main 3dc689e + the largest shared-memory carveout asked for the engine's
# skinny / narrow linears and the 16-bit decode kernels (sm80::prefer_max_shared;
# GPUATTN_CARVEOUT_MAX=0 turns it off), carried (carry ["carry"]).
# Why: in calls 2-3 the 300- and 400-CTA int8 linears (c_attn, c_fc: 37 KB of shared memory a CTA)
# end 8.8-10 us after the kernel ahead and the 100-CTA ones (attn proj 31 KB, mlp proj 122 KB)
# 3.4 us, and asking L2 for the weights a kernel earlier made it worse, so the weights' bytes are
# not what waits. Hypothesis: the driver picks each launch's L1 / shared split from its own needs,
# and a CTA can start beside the kernel ahead's only on an SM whose split suits it; the 122 KB
# mlp proj and the 37 KB c_attn may want different splits, so c_attn's CTAs wait for SMs to drain.
# Expected if so: c_attn and c_fc increments toward ~4 us, 1.5B B1 int8 +20-30%; if not, +-1%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call4.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s39c
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
ts start
gen() { local label=$1 e=$2; shift 2
  env $e timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $e: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for e in GPUATTN_CARVEOUT_MAX=0 GPUATTN_CARVEOUT_MAX=1; do
    gen 1558m-B1-int8 $e 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8
    gen 124m-B1 $e 124m --batch 1 --prompt-len 16 --max-new 128
    gen 124m-B1-int8 $e 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
    gen 124m-B128-p512 $e 124m --batch 128 --prompt-len 512 --max-new 128
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for e in 0 1; do
  GPUATTN_CARVEOUT_MAX=$e CUDA_INJECTION64_PATH=/tmp/$v/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/n$e.csv \
    timeout 120 /tmp/$v/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -1
  python3 tools/trace_summary.py /tmp/n$e.csv --skip-replays 1 --top 10 > $OUT/trace-carveout$e.txt 2>&1
  ts "trace carveout=$e rc $?"; head -14 $OUT/trace-carveout$e.txt
done
timeout 150 /tmp/$v/gpuattn_cuda_tests --gtest_filter='*Decode*:*Gpt2EngineCuda*:*PagedKv*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
rm -f $OUT/gen.tmp; ts done
