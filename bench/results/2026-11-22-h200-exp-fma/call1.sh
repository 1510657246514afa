#!/usr/bin/env bash
# Device call 1 (eleventh session): part of each tile's exponentials on the FMA pipe (exp2_poly)
# inside the turns-around-exponentials loop at head dim 64 with 2 consumers (wip/exp-turns-fma),
# against main 4f86aa0 (.snap): every 4th (.fma4, the branch), every 3rd (.fma3), every 8th
# (.fma8) exponential of a row. Quick shapes 7 rounds, the sweep 2 rounds, then gpuattn verify on
# .fma4's build.
set -u
export GPUATTN_COMMIT=tree-exp-fma
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".fma4 .fma3 .fma8" OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 7 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".fma4 .fma3 .fma8" OUT=$OUT/s2 timeout $((500-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "D64|case|---|^#" 
timeout $((585-($(date +%s)-t0))) build-ab-b1/tools/gpuattn verify --device cuda --json $OUT/verify-fma4.json > $OUT/verify-fma4.log 2>&1; ts "verify .fma4 rc=$?"
tail -5 $OUT/verify-fma4.log
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
