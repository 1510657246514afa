#!/usr/bin/env bash
# Device call 7: what the first Q load's ~3 us is. Diagnostic builds (head dim 64 only, computing
# nothing) against main (.snap), quick shapes, 7 rounds; only the D64 row is meaningful:
#   .x4  Q by TMA after the prologue (call 6's reference)
#   .x6  the same, with both tensor maps prefetched (prefetch.tensormap) at kernel start
#   .x7  Q by cp.async (plain 16-byte loads, 2 consumer threads a row) instead of TMA
#   .x8  Q by TMA issued right after the barrier init, before __syncthreads
set -u
export GPUATTN_COMMIT=tree-diag-q
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".x4 .x6 .x7 .x8" OUT=$OUT/s1 timeout 500 scripts/ab.sh .snap 7 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -E "^##|D64"
cd "$OUT" && tar czf all.tgz s1 && rm -rf s1
