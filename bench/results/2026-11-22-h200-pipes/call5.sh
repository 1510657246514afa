#!/usr/bin/env bash
# Device call 5: the trace build with CTA 0's own span (kernel entry, barriers set up, stores
# drained) at the one-wave D64 shape and the short causal D64 one, to split the one-wave call's
# 17.7 us into what happens inside the CTA and what is launch and teardown.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
OUT=$OUT/trace timeout 300 scripts/sm90-trace.sh short-d64 causal-d64-512 > $OUT/trace.log 2>&1
ts "trace rc=$?"; grep -E "^==|median|span|^0 \|" $OUT/trace.log
cd $OUT && tar czf trace.tgz trace && rm -rf trace
