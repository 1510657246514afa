#!/usr/bin/env bash
# Device call 8: the trace build with CTA 0's entry and end on the GPU timer too, so that the
# summary converts cycles at the clock CTA 0 ran at, not an assumed 1.98 GHz.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
OUT=$OUT/trace timeout 240 scripts/sm90-trace.sh short-d64 causal-d64-512 causal-short > $OUT/trace.log 2>&1
ts "trace rc=$?"; grep -E "^==|^items|median|span|CTAs|^0 \|" $OUT/trace.log
cd $OUT && tar czf trace.tgz trace && rm -rf trace
