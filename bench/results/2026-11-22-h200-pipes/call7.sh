#!/usr/bin/env bash
# Device call 7: where the one-wave D64 call's 17.7 us go outside CTA 0: the trace build's
# SM90_CTAS line (every CTA's entry and end on the GPU timer) at short-d64 and causal-d64-512,
# and the empty-launch floor under the same event timing in the same run.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
OUT=$OUT/trace timeout 240 scripts/sm90-trace.sh short-d64 causal-d64-512 > $OUT/trace.log 2>&1
ts "trace rc=$?"; grep -E "^==|median|span|CTAs|^0 \|" $OUT/trace.log
timeout 60 build-trace/tools/gpuattn_launch_floor 200 > $OUT/floor.log 2>&1; ts "floor rc=$?"; cat $OUT/floor.log
cd $OUT && tar czf trace.tgz trace && rm -rf trace
