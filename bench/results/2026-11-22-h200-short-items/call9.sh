#!/usr/bin/env bash
# Device call 9: the D256 tile width by key count now that O no longer blocks the next Q
# (kD256WideTileMinKeys 512, .w512: 80-key tiles at S512 too; 2048, .w2048: 64-key tiles at
# S1024 too) against main 35a3896 (.m2), the sweep 2 rounds; then main's build with the
# 3-consumer D64 kernel forced (GPUATTN_KERNEL=sm90_ws_192x128) on the sweep, against the same.
set -u
export GPUATTN_COMMIT=tree-d256-width
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".w512 .w2048" OUT=$OUT/s1 timeout 300 scripts/ab.sh .m2 2 >"$OUT/s1/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "D256|case|---|^#"
for r in 1 2; do
  build-ab-a/tools/gpuattn bench --device cuda --shapes sweep --json $OUT/base-$r.json > $OUT/base-$r.log 2>&1
  GPUATTN_KERNEL=sm90_ws_192x128 build-ab-a/tools/gpuattn bench --device cuda --shapes sweep --json $OUT/c3-$r.json > $OUT/c3-$r.log 2>&1
done; ts "192x128 forced"
grep -E "D64" $OUT/base-2.log | head -12; echo; grep -E "D64" $OUT/c3-2.log | head -12
cd "$OUT" && tar czf all.tgz s1 base-* c3-* && rm -rf s1 base-* c3-*
