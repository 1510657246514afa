#!/usr/bin/env bash
# Device call 4: the consumers' turns around each tile's exponentials (cuDNN's D64 loop, from its
# SASS in call 3; Tr::kExpTurns) against main cedf0d2 (.snap): .ex at head dim 64 (2 and 3
# consumers), .ex2 at head dim 64 with 2 consumers only, .ex128 at head dims 64 and 128. Quick
# shapes 7 rounds, the sweep 2 rounds, then gpuattn verify on .ex's build.
set -u
export GPUATTN_COMMIT=tree-exp-turns
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".ex .ex2 .ex128" OUT=$OUT/s1 timeout 280 scripts/ab.sh .snap 7 >"$OUT/s1/ab.log" 2>&1; ts "quick ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".ex .ex2 .ex128" OUT=$OUT/s2 timeout $((500-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
timeout $((585-($(date +%s)-t0))) build-ab-b1/tools/gpuattn verify --device cuda --json $OUT/verify-ex.json > $OUT/verify-ex.log 2>&1; ts "verify .ex rc=$?"
tail -5 $OUT/verify-ex.log
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
