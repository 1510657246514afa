#!/usr/bin/env bash
# s60 call 2: the timing half of the GPU check at main (named shapes against cuDNN / FA2 in the same
# run, the FA3-style sweep, and every sweep point again with ours, cuDNN and FA2 in turn, 5
# rounds; no sparse steps). The last timing half was session 32's (94e18ff, 2026-11-29); the
# kernels changed since in sessions 55-58 (the 2-CTA D64 kernel, half last tiles, the D128 short
# causal twin, the own dense / causal instantiations).
#   GPUATTN_COMMIT=<sha> OUT=$OUT bash bench/results/2026-12-01-h200-s60/call2.sh   (~5-6 min)
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s)
OUT=$OUT GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 timeout 560 scripts/gpu-check.sh \
  > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(($(date +%s) - t0)) s"
tail -70 $OUT/console.log | grep -v '^$' | tail -60
