#!/usr/bin/env bash
# Device call 2: the first GPU run of the trace build whose stamps the host prints (no in-kernel
# printf, so no serialized wgmma): per-item phases of CTA 0 at the short causal shapes under 1.0x
# cuDNN (D64 / D256 S512), B16 S1024 D128 causal and B1 H16 S1024 D64, at main.
set -u
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
OUT=$OUT/trace timeout 400 scripts/sm90-trace.sh causal-d64-512 causal-d256-512 causal-short short-d64 > $OUT/trace.log 2>&1; ts "trace rc=$?"
cat $OUT/trace.log | cut -c1-200
