#!/usr/bin/env bash
# Device call 2: half tiles (wip/diag-half): a consumer warpgroup skips the 64-key half of its last
# 128-key tile that none of its rows sees (square causal: the first warpgroup's diagonal tile;
# a ragged key end), S as m64n64 and P V in 4 k-steps. .h1 at head dim 64 only, .h2 at head dims
# 64 and 128 (not on the first tile at 128); main 4f86aa0 in .snap. Default shapes 3 rounds, the
# sweep 2 rounds, then gpuattn verify on .h2's build.
set -u
export GPUATTN_COMMIT=tree-diag-half
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".h1 .h2" OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 3 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".h1 .h2" OUT=$OUT/s2 timeout $((480-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "causal|case|---|^#"
timeout $((585-($(date +%s)-t0))) build-ab-b2/tools/gpuattn verify --device cuda --json $OUT/verify-h2.json > $OUT/verify-h2.log 2>&1; ts "verify .h2 rc=$?"
grep -E "FAIL|all passed|failed" $OUT/verify-h2.log | head
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
