#!/usr/bin/env bash
# Device call 4: the epilogue's row totals (quad sums, reciprocals, LSE) worked out while the
# item's last P V GEMM runs (wip/early-sums, .es) against main (.snap): gpuattn verify on .es's
# build, the sweep 2 rounds, default shapes 4 rounds, then the finer trace (.tr) is not rerun.
set -u
export GPUATTN_COMMIT=tree-early-sums
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".es" OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 2 >"$OUT/s1/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
timeout 150 build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-es.json > $OUT/verify-es.log 2>&1; ts "verify .es rc=$?"
grep -E "FAIL|passed|failed" $OUT/verify-es.log | tail -3
mkdir -p "$OUT/s2"; AB_SHAPES=default AB_SPARSE=1 AB_B_DIRS=".es" OUT=$OUT/s2 timeout $((585-($(date +%s)-t0))) scripts/ab.sh .snap 4 >"$OUT/s2/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
