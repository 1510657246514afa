#!/usr/bin/env bash
# Device call 8: across items at head dim 64 (wip/cross-item: the next item's first S GEMM issued
# with this item's last P V, .ci) and the same with 4 K/V stages at D64 2-consumer (.ci4, so the
# producer loads the next item's first tile earlier), against main 35a3896 (.m2): the sweep 2
# rounds, gpuattn verify on both builds, default shapes 3 rounds.
set -u
export GPUATTN_COMMIT=tree-cross-item
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".ci .ci4" OUT=$OUT/s1 timeout 240 scripts/ab.sh .m2 2 >"$OUT/s1/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "D64|case|---|^#"
for b in 1 2; do
  timeout 110 build-ab-b$b/tools/gpuattn verify --device cuda --json $OUT/verify-b$b.json > $OUT/verify-b$b.log 2>&1; ts "verify b$b rc=$?"
  grep -E "FAIL|passed|failed" $OUT/verify-b$b.log | tail -3
done
mkdir -p "$OUT/s2"; AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".ci .ci4" OUT=$OUT/s2 timeout $((585-($(date +%s)-t0))) scripts/ab.sh .m2 3 >"$OUT/s2/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
