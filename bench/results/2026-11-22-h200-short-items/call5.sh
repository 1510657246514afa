#!/usr/bin/env bash
# Device call 5: the D256 dense kernel's O staged through the last tile's stage (warpgroup 0 in its
# K half, warpgroup 1 in its V half) with the one Q buffer handed back after the item's last S
# GEMM (wip/d256-stage-o, .so) against main (.snap): gpuattn verify on .so's build first, the
# sweep 2 rounds, the trace of .so at causal-d256-512, then default shapes 3 rounds.
set -u
export GPUATTN_COMMIT=tree-d256-stage-o
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".so" OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 2 >"$OUT/s1/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "D256|case|---"
timeout 150 build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-so.json > $OUT/verify-so.log 2>&1; ts "verify .so rc=$?"
grep -E "FAIL|passed|failed" $OUT/verify-so.log | tail -3
(cd .so && OUT=$OUT/tr-so timeout 100 scripts/sm90-trace.sh causal-d256-512 > $OUT/tr-so.log 2>&1); ts "trace .so rc=$?"
tail -1 $OUT/tr-so.log
mkdir -p "$OUT/s2"; AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".so" OUT=$OUT/s2 timeout $((585-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s2/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 tr-so && rm -rf s1 s2 tr-so
